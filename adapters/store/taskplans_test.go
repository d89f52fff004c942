package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// seedPlanTasks puts n tasks in ws over its 100 projects and 10 users, a
// load's shape: statuses in turn, half of them assigned, two thirds dated,
// titles of a few hundred word pairs; and n/10 in another workspace.
func seedPlanTasks(t *testing.T, db *store.DB, ws domain.Workspace, n int) (projects, users []string) {
	t.Helper()
	for i := range 100 {
		projects = append(projects, newProject(t, db, ws, "P"+string(rune('A'+i/26))+string(rune('A'+i%26)), base).ID)
	}
	for i := range 10 {
		users = append(users, newUser(t, db, ws, "u"+string(rune('a'+i))+"@x.test", base).ID)
	}
	other := newWorkspace(t, db)
	op := newProject(t, db, other, "OTH", base)
	// The status counters' triggers are off while seeding: a hundred
	// thousand updates of a hundred project rows in one transaction would
	// take minutes, and no plan here reads them.
	err := db.Gorm().Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SET LOCAL session_replication_role = replica").Error; err != nil {
			return err
		}
		if err := tx.Exec(`
		INSERT INTO tasks (id, workspace_id, project_id, title, status, assignee_id, due_at, created_at, updated_at)
		SELECT 'tsk_' || lpad(g::text, 22, '0'),
		       CASE WHEN g % 11 = 0 THEN ? ELSE ? END,
		       CASE WHEN g % 11 = 0 THEN ? ELSE (?::text[])[g % 100 + 1] END,
		       'Task ' || g || ': ' || (ARRAY['write','review','ship','plan','fix','draft','test','design'])[g % 8 + 1]
		           || ' the ' || (ARRAY['announcement','release','login','docs','budget','roadmap','invoice'])[g % 7 + 1],
		       (ARRAY['open','in_progress','done','archived'])[g % 4 + 1],
		       CASE WHEN g % 11 <> 0 AND g % 2 = 0 THEN (?::text[])[g % 10 + 1] END,
		       CASE WHEN g % 3 <> 0 THEN TIMESTAMPTZ '2026-02-01 00:00:00+00' + (g % 1000) * INTERVAL '1 hour' END,
		       TIMESTAMPTZ '2026-01-01 00:00:00+00' + g * INTERVAL '1 second',
		       TIMESTAMPTZ '2026-01-01 00:00:00+00' + g * INTERVAL '1 second' + (g % 97) * INTERVAL '1 hour'
		FROM generate_series(1, ?) AS g`,
			other.ID, ws.ID, op.ID, "{"+strings.Join(projects, ",")+"}", "{"+strings.Join(users, ",")+"}", n+n/10).Error; err != nil {
			return err
		}
		// The search column's trigger is off too: the rows get the SQL
		// rule's prefixes, those the server writes for these titles.
		return tx.Exec("UPDATE tasks SET search = worktrack_title_prefixes(title)").Error
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm().Exec(`ANALYZE tasks`).Error; err != nil {
		t.Fatal(err)
	}
	return projects, users
}

// On PostgreSQL every filter and order of the task lists, and every count,
// is served by an index at 100,000 tasks, never a sequential scan of the
// table; an order's page is read from its index in order (no sort), after
// the cursor, however deep. Plans are read with sequential scans off, so
// that each shows an index serves it; the list pages' plans are also read
// as the planner chooses them.
func TestPostgresTaskQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	ws := newWorkspace(t, db)
	projects, users := seedPlanTasks(t, db, ws, 100_000)
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cursor := &domain.Position{At: at, ID: "tsk_0000000000000000043200"}
	w := ws.ID
	open := []domain.Status{domain.StatusOpen, domain.StatusInProgress}
	due := domain.TaskOrder{Field: domain.TaskOrderDueAt}
	for _, tc := range []struct {
		name  string
		f     ports.TaskFilter
		index string // the index the plan must use
		// ordered: the page must come from the index in order (no Sort);
		// natural: the planner's own choice, sequential scans allowed, must
		// still use the index.
		ordered, natural bool
	}{
		{"every task", ports.TaskFilter{WorkspaceID: w}, "tasks_workspace_created_idx", true, true},
		{"every task, deep", ports.TaskFilter{WorkspaceID: w, After: cursor}, "tasks_workspace_created_idx", true, true},
		{"every task, newest first", ports.TaskFilter{WorkspaceID: w, Order: domain.TaskOrder{Desc: true}, After: cursor}, "tasks_workspace_created_idx", true, true},
		{"by updated_at", ports.TaskFilter{WorkspaceID: w, Order: domain.TaskOrder{Field: domain.TaskOrderUpdatedAt, Desc: true}, After: cursor}, "tasks_workspace_updated_idx", true, true},
		{"by due_at", ports.TaskFilter{WorkspaceID: w, Order: due, After: cursor}, "tasks_workspace_due_idx", true, true},
		{"by due_at, descending", ports.TaskFilter{WorkspaceID: w, Order: domain.TaskOrder{Field: domain.TaskOrderDueAt, Desc: true}}, "tasks_workspace_due_idx", true, true},
		{"by due_at, undated part", ports.TaskFilter{WorkspaceID: w, Order: due, After: &domain.Position{Null: true, ID: "tsk_0000000000000000050000"}}, "tasks_workspace_due_idx", true, true},
		{"one project", ports.TaskFilter{WorkspaceID: w, ProjectIDs: projects[:1], After: cursor}, "tasks_project_created_idx", true, true},
		{"one project, one status", ports.TaskFilter{WorkspaceID: w, ProjectIDs: projects[:1], Statuses: open[:1]}, "tasks_project_status_created_idx", true, true},
		{"one project and assignee", ports.TaskFilter{WorkspaceID: w, ProjectIDs: projects[:1], AssigneeIDs: users[:1]}, "tasks_project_assignee_created_idx", true, true},
		{"mine, open, by due_at", ports.TaskFilter{WorkspaceID: w, AssigneeIDs: users[:1], Statuses: open, Order: due}, "tasks_workspace_assignee_due_idx", true, true},
		{"mine, open, by due_at, deep", ports.TaskFilter{WorkspaceID: w, AssigneeIDs: users[:1], Statuses: open, Order: due, After: &domain.Position{At: at.AddDate(0, 1, 5), ID: "tsk_x"}}, "tasks_workspace_assignee_due_idx", true, true},
		{"unassigned", ports.TaskFilter{WorkspaceID: w, Unassigned: true, Order: due}, "tasks_workspace_", true, false},
		{"three projects", ports.TaskFilter{WorkspaceID: w, ProjectIDs: projects[:3]}, "tasks_", false, false},
		{"several assignees or none", ports.TaskFilter{WorkspaceID: w, AssigneeIDs: users[:3], Unassigned: true}, "tasks_", false, false},
		{"statuses", ports.TaskFilter{WorkspaceID: w, Statuses: open}, "tasks_workspace_created_idx", true, false},
		{"due window", ports.TaskFilter{WorkspaceID: w, DueAfter: &at, DueBefore: ptr(at.Add(24 * time.Hour))}, "tasks_workspace_due_idx", false, false},
		{"updated after", ports.TaskFilter{WorkspaceID: w, UpdatedAfter: &at, Order: domain.TaskOrder{Field: domain.TaskOrderUpdatedAt}}, "tasks_workspace_updated_idx", true, false},
		// Common words: walking the order's index finds a page sooner than
		// fetching every match; a rare word: the words' index.
		{"search, common words", ports.TaskFilter{WorkspaceID: w, Words: []string{"wri", "ann"}}, "tasks_workspace_created_idx", true, true},
		{"search, a rare word", ports.TaskFilter{WorkspaceID: w, Words: []string{"1234"}}, "tasks_search_idx", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Limit = 21
			q, args := store.TaskPageSQL(store.DialectPostgres, tc.f)
			check := func(plan string) {
				t.Helper()
				if strings.Contains(plan, "Seq Scan on tasks") || !strings.Contains(plan, tc.index) {
					t.Fatalf("not served by %s:\n%s", tc.index, plan)
				}
				if tc.ordered && strings.Contains(plan, "Sort") {
					t.Fatalf("the page is sorted, not read from the index in order:\n%s", plan)
				}
			}
			check(explain(t, db, q, args, false))
			if tc.natural {
				check(explain(t, db, q, args, true))
			}
		})
	}
	for _, by := range []domain.TaskCountGroup{domain.CountByStatus, domain.CountByAssignee, domain.CountByProject} {
		for name, f := range map[string]ports.TaskFilter{
			"every task": {WorkspaceID: w},
			"mine":       {WorkspaceID: w, AssigneeIDs: users[:1], Statuses: open},
			"updated":    {WorkspaceID: w, UpdatedAfter: &at},
			"search":     {WorkspaceID: w, Words: []string{"ship"}},
		} {
			t.Run("count "+name+" by "+string(by), func(t *testing.T) {
				q, args := store.TaskCountSQL(store.DialectPostgres, f, by)
				if plan := explain(t, db, q, args, false); strings.Contains(plan, "Seq Scan on tasks") || !strings.Contains(plan, "tasks_") {
					t.Fatalf("the count is not served by an index:\n%s", plan)
				}
			})
		}
	}
}

func ptr[T any](v T) *T { return &v }

// explain returns q's plan; natural leaves the planner its sequential scans.
func explain(t *testing.T, db *store.DB, q string, args []any, natural bool) string {
	t.Helper()
	var plan []string
	err := db.Gorm().WithContext(context.Background()).Transaction(func(tx *gorm.DB) error {
		if !natural {
			if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
				return err
			}
		}
		return tx.Raw("EXPLAIN "+q, args...).Scan(&plan).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// The server writes a task's search prefixes with it, the SQL rule's for
// the same title, and rewrites them with the title; a row written without
// them (a bulk load) gets them from the trigger.
func TestSearchColumnFollowsTheTitle(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	ctx := context.Background()
	ws := newWorkspace(t, db)
	p := newProject(t, db, ws, "SRCH", base)
	task := newTask(t, db, p, domain.TaskFields{Title: domain.Set("Write the release-notes, v2")}, base)
	same := func(id string) bool {
		t.Helper()
		var ok bool
		if err := db.Gorm().Raw("SELECT search = worktrack_title_prefixes(title) FROM tasks WHERE id = ?", id).Scan(&ok).Error; err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !same(task.ID) {
		t.Fatal("the search prefixes the server wrote differ from the SQL rule's")
	}
	task.Title = "Ship the budget"
	if err := db.Tasks().UpdateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if !same(task.ID) {
		t.Fatal("a renamed task's search prefixes were not rewritten")
	}
	if err := db.Gorm().Exec(`INSERT INTO tasks (id, workspace_id, project_id, title, status, created_at, updated_at)
		VALUES ('tsk_rawrawrawrawrawrawrawraw', ?, ?, 'Loaded in bulk', 'open', now(), now())`, ws.ID, p.ID).Error; err != nil {
		t.Fatal(err)
	}
	if !same("tsk_rawrawrawrawrawrawrawraw") {
		t.Fatal("search not computed for a row written without it")
	}
}
