// Command exportbench measures worktrack export and import against
// pg_dump -Fc and pg_restore on the same PostgreSQL database, in one run
// (docs/performance.md#export-and-import): a database of TASKS tasks (default
// 1,000,000) with their task.created events, seeded with COPY; then
//
//	pg_dump -Fc               vs  worktrack export --out FILE
//	pg_restore (empty db)     vs  worktrack import --into-empty (empty migrated db)
//	worktrack import into SQLite, export from it, import into PostgreSQL
//
// each timed, with the peak RSS of every command (its VmHWM), and the
// counts of every import checked against the source. EXPORTBENCH_QUICK=1
// runs 5,000 tasks and fails on a wrong count (CI); the full run prints the
// table the closing note quotes. Needs bin/worktrack (make build), pg_dump
// and pg_restore of the server's major version, and TEST_DATABASE_URL (a
// role that may create databases).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/worktrack/worktrack/core/domain"
)

const dbPrefix = "worktrack_xbench"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "exportbench: FAILED:", err)
		os.Exit(1)
	}
}

type measured struct {
	name    string
	took    time.Duration
	peakRSS int64 // KiB
	out     string
}

func run() error {
	ctx := context.Background()
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	tasks := 1_000_000
	if os.Getenv("EXPORTBENCH_QUICK") == "1" {
		tasks = 5_000
	}
	if v := os.Getenv("EXPORTBENCH_TASKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("EXPORTBENCH_TASKS: %w", err)
		}
		tasks = n
	}
	bin, err := filepath.Abs("bin/worktrack")
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: run make build first", bin)
	}
	tmp, err := os.MkdirTemp("", "exportbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("TEST_DATABASE_URL: %w", err)
	}
	defer conn.Close(ctx)
	names := map[string]string{}
	for _, n := range []string{"source", "restored", "imported", "fromsqlite"} {
		names[n] = dbPrefix + "_" + n
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+names[n]); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+names[n]); err != nil {
			return err
		}
	}
	defer func() {
		for _, n := range names {
			_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)")
		}
	}()
	urlOf := func(name string) string {
		u, _ := url.Parse(admin)
		u.Path = "/" + name
		return u.String()
	}
	for _, n := range []string{"source", "imported", "fromsqlite"} {
		if _, err := runCmd(bin, []string{"DATABASE_URL=" + urlOf(names[n])}, "migrate"); err != nil {
			return fmt.Errorf("migrate %s: %w", n, err)
		}
	}
	start := time.Now()
	if err := seed(ctx, urlOf(names["source"]), tasks); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Printf("exportbench: seeded %d tasks and their events in %v\n", tasks, time.Since(start).Round(time.Millisecond))

	dump := filepath.Join(tmp, "source.dump")
	file := filepath.Join(tmp, "source.ndjson")
	sqliteFile := filepath.Join(tmp, "moved.db")
	sqliteExport := filepath.Join(tmp, "fromsqlite.ndjson")
	src := "DATABASE_URL=" + urlOf(names["source"])
	var results []measured
	step := func(name, prog string, env []string, args ...string) error {
		m, err := runCmd(prog, env, args...)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		m.name = name
		results = append(results, m)
		fmt.Printf("exportbench: %-40s %8.2f s  peak RSS %6.1f MiB\n", name, m.took.Seconds(), float64(m.peakRSS)/1024)
		return nil
	}
	for _, s := range []struct {
		name, prog string
		env        []string
		args       []string
	}{
		{"pg_dump -Fc", "pg_dump", nil, []string{"-Fc", "-f", dump, urlOf(names["source"])}},
		{"worktrack export (PostgreSQL)", bin, []string{src}, []string{"export", "--out", file}},
		{"pg_restore into an empty database", "pg_restore", nil, []string{"--no-owner", "-d", urlOf(names["restored"]), dump}},
		{"worktrack import --into-empty (PostgreSQL)", bin, []string{"DATABASE_URL=" + urlOf(names["imported"])}, []string{"import", "--in", file, "--into-empty"}},
		{"worktrack import --into-empty (SQLite)", bin, []string{"DATABASE_URL=sqlite:" + sqliteFile}, []string{"import", "--in", file, "--into-empty"}},
		{"worktrack export (SQLite)", bin, []string{"DATABASE_URL=sqlite:" + sqliteFile}, []string{"export", "--out", sqliteExport}},
		{"SQLite's file into PostgreSQL (import)", bin, []string{"DATABASE_URL=" + urlOf(names["fromsqlite"])}, []string{"import", "--in", sqliteExport, "--into-empty"}},
	} {
		if err := step(s.name, s.prog, s.env, s.args...); err != nil {
			return err
		}
	}
	// Every import holds what the source holds.
	want := countsOf(results[1].out)
	for _, i := range []int{3, 4, 6} {
		if got := countsOf(results[i].out); !equalCounts(got, want) {
			return fmt.Errorf("%s counted %v, the export %v", results[i].name, got, want)
		}
	}
	if want["task"] != float64(tasks) || want["event"] < float64(tasks) {
		return fmt.Errorf("the export counted %v, want %d tasks and their events", want, tasks)
	}
	fi, _ := os.Stat(file)
	di, _ := os.Stat(dump)
	fmt.Printf("\nexportbench: %d tasks with their events; export file %.1f MiB (pg_dump -Fc %.1f MiB)\n\n", tasks,
		float64(fi.Size())/(1<<20), float64(di.Size())/(1<<20))
	fmt.Printf("| step | seconds | peak RSS | target |\n|---|---|---|---|\n")
	exportRatio := results[1].took.Seconds() / results[0].took.Seconds()
	importRatio := results[3].took.Seconds() / results[2].took.Seconds()
	for i, r := range results {
		target := ""
		switch i {
		case 1:
			target = fmt.Sprintf("%.2fx pg_dump (≤ 1.5x)", exportRatio)
		case 3:
			target = fmt.Sprintf("%.2fx pg_restore (≤ 2x)", importRatio)
		}
		fmt.Printf("| %s | %.2f | %.1f MiB | %s |\n", r.name, r.took.Seconds(), float64(r.peakRSS)/1024, target)
	}
	if os.Getenv("EXPORTBENCH_QUICK") == "1" {
		fmt.Println("exportbench: quick run passed: every import holds what the export holds")
	}
	return nil
}

// runCmd runs prog and measures its wall time and peak RSS. The peak is the
// child's own VmHWM, sampled from /proc every 10 ms until it exits: the
// rusage of a waited child is no good here, because Linux keeps in ru_maxrss
// the RSS of the process image exec replaced (this Go program's), so every
// small child would report ours.
func runCmd(prog string, env []string, args ...string) (measured, error) {
	cmd := exec.Command(prog, args...) //nolint:gosec // our own programs and arguments
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	var errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return measured{}, err
	}
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var hwm int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := vmHWM(cmd.Process.Pid); v > hwm {
				hwm = v
			}
			select {
			case <-done:
				peak <- hwm
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	m := measured{took: time.Since(start), out: out.String(), peakRSS: <-peak}
	if err != nil {
		return m, fmt.Errorf("%w\n%s%s", err, out.String(), errb.String())
	}
	return m, nil
}

// vmHWM reads the peak resident set (KiB) of a running process, 0 once it
// has exited.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

func countsOf(summary string) map[string]float64 {
	var s struct {
		Counts map[string]float64 `json:"counts"`
	}
	_ = json.Unmarshal([]byte(summary), &s)
	return s.Counts
}

func equalCounts(a, b map[string]float64) bool {
	for k, v := range b {
		if k == "audit_event" {
			continue // an import appends its own record
		}
		if a[k] != v {
			return false
		}
	}
	return len(a) > 0
}

// seed writes one workspace, an admin with a key, 100 projects and tasks
// tasks, each with its task.created event in log order, with COPY; the
// projects' counts as the tasks make them.
func seed(ctx context.Context, dsn string, tasks int) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	ws := domain.NewID(domain.PrefixWorkspace)
	user := domain.NewID(domain.PrefixUser)
	if _, err := conn.Exec(ctx, "INSERT INTO workspaces (id, name, created_at) VALUES ($1, 'Bench', $2)", ws, at); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "INSERT INTO users (id, workspace_id, email, name, role, created_at) VALUES ($1, $2, 'bench@bench.test', 'Bench', 'admin', $3)", user, ws, at); err != nil {
		return err
	}
	const projects = 100
	pids := make([]string, projects)
	counts := make([][4]int, projects)
	statuses := []string{"open", "in_progress", "done", "archived"}
	prows := make([][]any, projects)
	for i := range pids {
		pids[i] = domain.NewID(domain.PrefixProject)
	}
	for i := range tasks {
		counts[i%projects][i%4]++
	}
	for i, id := range pids {
		c := counts[i]
		prows[i] = []any{id, ws, fmt.Sprintf("Project %d", i), fmt.Sprintf("P%d", i), c[0] + c[1] + c[2] + c[3], c[0], c[1], c[2], c[3], at, at}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"projects"},
		[]string{"id", "workspace_id", "name", "key", "task_count", "open_count", "in_progress_count", "done_count", "archived_count", "created_at", "updated_at"},
		pgx.CopyFromRows(prows)); err != nil {
		return err
	}
	taskCols := []string{"id", "workspace_id", "project_id", "title", "status", "assignee_id", "created_at", "updated_at", "search"}
	eventCols := []string{"id", "workspace_id", "type", "project_id", "created_at", "payload", "seq"}
	const batch = 20_000
	for start := 0; start < tasks; start += batch {
		n := min(batch, tasks-start)
		trows := make([][]any, n)
		erows := make([][]any, n)
		for j := range n {
			i := start + j
			id := domain.NewID(domain.PrefixTask)
			p := pids[i%projects]
			title := fmt.Sprintf("Task %d: write the release", i)
			created := at.Add(time.Duration(i) * time.Millisecond)
			var assignee any
			if i%2 == 0 {
				assignee = user
			}
			trows[j] = []any{id, ws, p, title, statuses[i%4], assignee, created, created, nil}
			doc := fmt.Sprintf(`{"id":"%s","object":"event","type":"task.created","created_at":"%s","data":{"id":"%s","object":"task","project_id":"%s","title":%q,"status":"%s","assignee_id":null,"due_at":null,"created_at":"%s","updated_at":"%s"}}`,
				domain.NewID(domain.PrefixEvent), domain.FormatTime(created), id, p, title, statuses[i%4], domain.FormatTime(created), domain.FormatTime(created))
			var e struct{ ID string }
			_ = json.Unmarshal([]byte(doc), &e)
			erows[j] = []any{e.ID, ws, "task.created", p, created, []byte(doc), int64(i + 1)}
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"tasks"}, taskCols, pgx.CopyFromRows(trows)); err != nil {
			return err
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"events"}, eventCols, pgx.CopyFromRows(erows)); err != nil {
			return err
		}
	}
	// The tasks' insert trigger counted them into deltas as well: the
	// projects' rows already hold the counts.
	if _, err := conn.Exec(ctx, "DELETE FROM project_count_deltas"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "UPDATE event_sequence SET last = $1 WHERE id = 1", int64(tasks)); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "VACUUM ANALYZE")
	return err
}
