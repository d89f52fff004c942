package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/worktrack/worktrack/core/domain"
)

// Dataset sizes: the same as the reference's -seed, so that both sides
// read tables of the same shape.
const (
	numProjects = 100
	numTasks    = 100_000
	numUsers    = 50
)

// sqliteTimeLayout is how adapters/store writes instants into SQLite
// (store.timeLayout): fixed width, UTC, microseconds.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000Z"

type userRow struct {
	id, email, name, role string
}

type projectRow struct {
	id, name, key string
	taskCount     int
	// byStatus counts the project's tasks by status, in the order of
	// statuses (the projects' open_count, in_progress_count, …).
	byStatus [4]int
}

// statuses are the task statuses, in the order of projectRow.byStatus.
var statuses = []string{"open", "in_progress", "done", "archived"}

// Titles are "Task N: <verb> the <noun>", so that a search (the search-q
// scenario's "wri ann", say) matches about 1 task in 56: enough for 40
// pages of 20.
var (
	titleVerbs = []string{"write", "review", "ship", "plan", "fix", "draft", "test", "design"}
	titleNouns = []string{"announcement", "release", "login", "docs", "budget", "roadmap", "invoice"}
)

// mineShare is the share of the assigned tasks that go to the key's user
// (users[0]): enough for the filter-mine scenario to read 40 pages.
const mineShare = 5

type taskRow struct {
	id, projectID, title, status string
	assigneeID                   *string
	dueAt                        *time.Time
	createdAt, updatedAt         time.Time
}

// projectColumns are the columns the seeds write of a project.
var projectColumns = []string{
	"id", "workspace_id", "name", "key", "task_count",
	"open_count", "in_progress_count", "done_count", "archived_count", "created_at", "updated_at",
}

// keyRow is an API key of the dataset's admin.
type keyRow struct {
	id, name, secret   string
	scopes, projectIDs string // JSON, as the api_keys table stores them; projectIDs "" for NULL
}

// Keys of the dataset, by what they may do.
const (
	keyUnscoped   = 0 // "*"
	keyScoped     = 1 // projects:read, tasks:read
	keyRestricted = 2 // the same, restricted to the first restrictedProjects projects
)

// restrictedProjects is how many projects the restricted key sees: the most
// a key may name.
const restrictedProjects = domain.MaxKeyProjects

// dataset is one workspace with its users, one API key, projects and tasks,
// generated once in memory and written to PostgreSQL and SQLite alike, so
// that the same path files serve both.
type dataset struct {
	workspaceID string
	created     time.Time
	users       []userRow
	keyID       string
	secret      string // the key secret, sent as the Bearer token
	// keys are the dataset's API keys: the unscoped one above (every
	// scope), then the scoped ones of the rest-get-scoped and
	// rest-get-restricted scenarios.
	keys     []keyRow
	projects []projectRow
	tasks    []taskRow
}

// newDataset makes the rows with the id, secret and time formats of
// core/domain: prefixed random base62 ids (domain.NewID), a wtk_ secret
// stored as domain.HashSecret, times in UTC truncated to microseconds.
func newDataset() *dataset {
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed)) //nolint:gosec // load data, not secrets
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	d := &dataset{
		workspaceID: domain.NewID(domain.PrefixWorkspace),
		created:     base.Add(-24 * time.Hour),
		keyID:       domain.NewID(domain.PrefixAPIKey),
		secret:      domain.SecretPrefix + domain.RandomBase62(40),
	}
	for i := range numProjects {
		d.projects = append(d.projects, projectRow{
			id: domain.NewID(domain.PrefixProject), name: fmt.Sprintf("Load project %03d", i),
			key: fmt.Sprintf("LOAD%03d", i),
		})
	}
	d.keys = newKeys(d)
	for i := range numUsers {
		role := "member"
		if i == 0 {
			role = "admin" // the key's user
		}
		d.users = append(d.users, userRow{
			id: domain.NewID(domain.PrefixUser), email: fmt.Sprintf("user%02d@load.test", i),
			name: fmt.Sprintf("Load User %02d", i), role: role,
		})
	}
	d.tasks = make([]taskRow, 0, numTasks)
	for i := range numTasks {
		p := rng.IntN(numProjects)
		status := rng.IntN(len(statuses))
		d.projects[p].taskCount++
		d.projects[p].byStatus[status]++
		created := base.Add(time.Duration(i)*time.Minute + time.Duration(rng.IntN(60_000_000))*time.Microsecond)
		t := taskRow{
			id: domain.NewID(domain.PrefixTask), projectID: d.projects[p].id,
			title:     fmt.Sprintf("Task %d: %s the %s", i, titleVerbs[rng.IntN(len(titleVerbs))], titleNouns[rng.IntN(len(titleNouns))]),
			status:    statuses[status],
			createdAt: created.UTC().Truncate(time.Microsecond),
			updatedAt: created.Add(time.Duration(rng.IntN(3600)) * time.Second).UTC().Truncate(time.Microsecond),
		}
		if rng.IntN(2) == 0 { // half the tasks are assigned, a fifth of those to the key's user
			a := d.users[rng.IntN(len(d.users))].id
			if rng.IntN(mineShare) == 0 {
				a = d.users[0].id
			}
			t.assigneeID = &a
		}
		if rng.IntN(3) != 0 {
			due := created.Add(time.Duration(rng.IntN(30*24)) * time.Hour).UTC().Truncate(time.Microsecond)
			t.dueAt = &due
		}
		d.tasks = append(d.tasks, t)
	}
	return d
}

// newHookedDataset is the second workspace of the rest-create-webhook
// scenario: an admin, an unscoped key and numProjects empty projects. Its
// webhook is registered over the API once the server runs
// (harness.registerHook): its secret is sealed at rest.
func newHookedDataset() *dataset {
	d := &dataset{
		workspaceID: domain.NewID(domain.PrefixWorkspace),
		created:     time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC),
		keyID:       domain.NewID(domain.PrefixAPIKey),
		secret:      domain.SecretPrefix + domain.RandomBase62(40),
		users:       []userRow{{id: domain.NewID(domain.PrefixUser), email: "hooked@load.test", name: "Hooked Admin", role: "admin"}},
	}
	for i := range numProjects {
		d.projects = append(d.projects, projectRow{
			id: domain.NewID(domain.PrefixProject), name: fmt.Sprintf("Hooked project %03d", i), key: fmt.Sprintf("HOOK%03d", i),
		})
	}
	d.keys = []keyRow{{id: d.keyID, name: "load hooked", secret: d.secret, scopes: `["*"]`}}
	return d
}

// newKeys makes the dataset's keys: the unscoped d.secret first.
func newKeys(d *dataset) []keyRow {
	restricted := make([]string, restrictedProjects)
	for i := range restricted {
		restricted[i] = d.projects[i].id
	}
	ids, _ := json.Marshal(restricted)
	const scoped = `["projects:read","tasks:read"]`
	return []keyRow{
		{id: d.keyID, name: "load", secret: d.secret, scopes: `["*"]`},
		{id: domain.NewID(domain.PrefixAPIKey), name: "load scoped", secret: domain.SecretPrefix + domain.RandomBase62(40), scopes: scoped},
		{id: domain.NewID(domain.PrefixAPIKey), name: "load restricted", secret: domain.SecretPrefix + domain.RandomBase62(40), scopes: scoped, projectIDs: string(ids)},
	}
}

// row is the key as the api_keys table's columns keyRowColumns hold it.
func (k keyRow) row(d *dataset, created any) []any {
	var projects any
	if k.projectIDs != "" {
		projects = k.projectIDs
	}
	return []any{k.id, d.workspaceID, d.users[0].id, k.name, domain.HashSecret(k.secret), k.secret[:domain.PrefixLength], k.scopes, projects, created}
}

var keyRowColumns = []string{"id", "workspace_id", "user_id", "name", "secret_hash", "prefix", "scopes", "project_ids", "created_at"}

// seedPostgres writes the dataset with COPY in one transaction, then
// ANALYZEs so that the planner knows the table sizes from the first query.
func seedPostgres(ctx context.Context, dsn string, d *dataset) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The projects' counts by status are written with the projects: the
	// triggers that keep them (one UPDATE of a project per task) are off for
	// this transaction, since a hundred thousand updates of a hundred rows
	// in one transaction would take minutes.
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		return err
	}
	copyRows := func(table string, cols []string, rows [][]any) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("copy %s: %w", table, err)
		}
		return nil
	}
	if err := copyRows("workspaces", []string{"id", "name", "created_at"},
		[][]any{{d.workspaceID, "Load", d.created}}); err != nil {
		return err
	}
	var rows [][]any
	for _, u := range d.users {
		rows = append(rows, []any{u.id, d.workspaceID, u.email, u.name, u.role, d.created})
	}
	if err := copyRows("users", []string{"id", "workspace_id", "email", "name", "role", "created_at"}, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, k := range d.keys {
		rows = append(rows, k.row(d, d.created))
	}
	if err := copyRows("api_keys", keyRowColumns, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, p := range d.projects {
		rows = append(rows, []any{p.id, d.workspaceID, p.name, p.key, p.taskCount, p.byStatus[0], p.byStatus[1], p.byStatus[2], p.byStatus[3], d.created, d.created})
	}
	if err := copyRows("projects", projectColumns, rows); err != nil {
		return err
	}
	rows = make([][]any, 0, len(d.tasks))
	for _, t := range d.tasks {
		rows = append(rows, []any{t.id, d.workspaceID, t.projectID, t.title, t.status, t.assigneeID, t.dueAt, t.createdAt, t.updatedAt})
	}
	if err := copyRows("tasks", []string{"id", "workspace_id", "project_id", "title", "status", "assignee_id", "due_at", "created_at", "updated_at"}, rows); err != nil {
		return err
	}
	// The search column's trigger is off with the others: the titles get
	// the prefixes the server would have written (VACUUM below clears the
	// rows this replaces).
	if _, err := tx.Exec(ctx, "UPDATE tasks SET search = worktrack_title_prefixes(title)"); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	// A server that has run a while has had its tables vacuumed: pages
	// all-visible, hint bits set, GIN pending lists merged. Freshly copied
	// rows have none of that, and every read would pay for it.
	_, err = conn.Exec(ctx, "VACUUM ANALYZE")
	return err
}

// seedSQLite writes the dataset with prepared INSERTs in one transaction,
// times as adapters/store writes them (sqliteTimeLayout).
func seedSQLite(ctx context.Context, path string, d *dataset) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	// One connection, so that the PRAGMA applies to the transaction; a large
	// page cache keeps the four task indexes in memory while they grow.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "PRAGMA cache_size = -262144"); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	ts := func(t time.Time) string { return t.UTC().Format(sqliteTimeLayout) }
	nts := func(t *time.Time) any {
		if t == nil {
			return nil
		}
		return ts(*t)
	}
	nstr := func(s *string) any {
		if s == nil {
			return nil
		}
		return *s
	}
	exec := func(q string, args ...any) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	if err := exec(`INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)`, d.workspaceID, "Load", ts(d.created)); err != nil {
		return err
	}
	for _, u := range d.users {
		if err := exec(`INSERT INTO users (id, workspace_id, email, name, role, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			u.id, d.workspaceID, u.email, u.name, u.role, ts(d.created)); err != nil {
			return err
		}
	}
	for _, k := range d.keys {
		if err := exec(`INSERT INTO api_keys (`+strings.Join(keyRowColumns, ", ")+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.row(d, ts(d.created))...); err != nil {
			return err
		}
	}
	for _, p := range d.projects {
		// The counts by status start at zero: the tasks table's triggers
		// count the tasks as they are inserted.
		if err := exec(`INSERT INTO projects (`+strings.Join(projectColumns, ", ")+`) VALUES (?, ?, ?, ?, ?, 0, 0, 0, 0, ?, ?)`,
			p.id, d.workspaceID, p.name, p.key, p.taskCount, ts(d.created), ts(d.created)); err != nil {
			return err
		}
	}
	// Multi-row INSERTs: one statement per sqliteBatch tasks keeps the
	// per-statement cost of the pure-Go driver out of the seeding time.
	const sqliteBatch = 200
	const cols = 9
	row := "(?" + strings.Repeat(", ?", cols-1) + ")"
	insert := func(rows []taskRow) error {
		q := "INSERT INTO tasks (id, workspace_id, project_id, title, status, assignee_id, due_at, created_at, updated_at) VALUES " +
			row + strings.Repeat(", "+row, len(rows)-1)
		args := make([]any, 0, len(rows)*cols)
		for _, t := range rows {
			args = append(args, t.id, d.workspaceID, t.projectID, t.title, t.status,
				nstr(t.assigneeID), nts(t.dueAt), ts(t.createdAt), ts(t.updatedAt))
		}
		return exec(q, args...)
	}
	for i := 0; i < len(d.tasks); i += sqliteBatch {
		if err := insert(d.tasks[i:min(i+sqliteBatch, len(d.tasks))]); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "ANALYZE")
	return err
}
