package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

func newTask(t *testing.T, db *store.DB, p domain.Project, in domain.TaskFields, at time.Time) domain.Task {
	t.Helper()
	task, err := domain.NewTask(domain.NewID(domain.PrefixTask), p.WorkspaceID, p.ID, in, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Tasks().CreateTasks(context.Background(), []domain.Task{task}); err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	return task
}

func TestTaskStoreRoundTripAndTenancy(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Tasks()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		u := newUser(t, db, ws, "a@x.test", base)
		p := newProject(t, db, ws, "TS", base)
		due := base.Add(48*time.Hour + 123456*time.Microsecond)
		task := newTask(t, db, p, domain.TaskFields{Title: domain.Set("T"), Status: domain.Set(domain.StatusInProgress), AssigneeID: domain.Set(u.ID), DueAt: domain.Set(due)}, base)

		got, err := s.FindTaskByID(ctx, ws.ID, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "round trip", got, task)
		wantCode(t, mustTaskErr(s.FindTaskByID(ctx, other.ID, task.ID)), domain.CodeNotFound, "")
		wantCode(t, mustTaskErr(s.FindTaskByID(ctx, ws.ID, "tsk_absent")), domain.CodeNotFound, "")
		if many, err := s.FindTasksByIDs(ctx, other.ID, []string{task.ID}); err != nil || len(many) != 0 {
			t.Fatalf("FindTasksByIDs leaked across workspaces: %v %v", many, err)
		}

		// Update writes the mutable fields, nulls included.
		task.Title, task.Status, task.AssigneeID, task.DueAt, task.UpdatedAt = "T2", domain.StatusDone, nil, nil, base.Add(time.Second)
		if err := s.UpdateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		got, _ = s.FindTaskByID(ctx, ws.ID, task.ID)
		equal(t, "after update", got, task)
		foreign := task
		foreign.WorkspaceID = other.ID
		wantCode(t, s.UpdateTask(ctx, foreign), domain.CodeNotFound, "")

		wantCode(t, s.DeleteTask(ctx, other.ID, task.ID), domain.CodeNotFound, "")
		if err := s.DeleteTask(ctx, ws.ID, task.ID); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.DeleteTask(ctx, ws.ID, task.ID), domain.CodeNotFound, "")
	})
}

func mustTaskErr(_ domain.Task, err error) error { return err }

// The database itself refuses a task whose project or assignee is of
// another workspace.
func TestTaskForeignKeysKeepTenancy(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		stranger := newUser(t, db, other, "s@x.test", base)
		p := newProject(t, db, ws, "FK", base)
		foreignPrj := newProject(t, db, other, "FK", base)

		task, _ := domain.NewTask(domain.NewID(domain.PrefixTask), ws.ID, p.ID, domain.TaskFields{Title: domain.Set("x"), AssigneeID: domain.Set(stranger.ID)}, base)
		if err := db.Tasks().CreateTasks(ctx, []domain.Task{task}); err == nil {
			t.Fatal("a task was assigned to a user of another workspace")
		}
		task, _ = domain.NewTask(domain.NewID(domain.PrefixTask), ws.ID, foreignPrj.ID, domain.TaskFields{Title: domain.Set("x")}, base)
		if err := db.Tasks().CreateTasks(ctx, []domain.Task{task}); err == nil {
			t.Fatal("a task was put in a project of another workspace")
		}
	})
}

func TestFindTasksFiltersAndKeyset(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws := newWorkspace(t, db)
		a, b := newUser(t, db, ws, "a@x.test", base), newUser(t, db, ws, "b@x.test", base)
		p, q := newProject(t, db, ws, "FA", base), newProject(t, db, ws, "FB", base)
		var all []domain.Task
		statuses := []domain.Status{domain.StatusOpen, domain.StatusInProgress, domain.StatusDone}
		for i := 0; i < 30; i++ {
			at := base.Add(time.Duration(i/3) * time.Microsecond) // three tasks share each instant
			in := domain.TaskFields{Title: domain.Set("t"), Status: domain.Set(statuses[i%3])}
			switch i % 5 {
			case 0:
				in.AssigneeID = domain.Set(a.ID)
			case 1:
				in.AssigneeID = domain.Set(b.ID)
			}
			all = append(all, newTask(t, db, p, in, at))
		}
		newTask(t, db, q, domain.TaskFields{Title: domain.Set("other project")}, base)
		sortByPosition(all, domain.Task.Position)

		open, assigned := domain.StatusOpen, a.ID
		for _, tc := range []struct {
			name   string
			status *domain.Status
			who    *string
		}{{"all", nil, nil}, {"status", &open, nil}, {"assignee", nil, &assigned}, {"both", &open, &assigned}} {
			t.Run(tc.name, func(t *testing.T) {
				var want []domain.Task
				for _, task := range all {
					if (tc.status == nil || task.Status == *tc.status) && (tc.who == nil || (task.AssigneeID != nil && *task.AssigneeID == *tc.who)) {
						want = append(want, task)
					}
				}
				for _, size := range []int{1, 4, 100} {
					got := collectPages(t, size, domain.Task.Position, func(after *domain.Position, limit int) ([]domain.Task, error) {
						f := ports.TaskFilter{WorkspaceID: ws.ID, ProjectIDs: []string{p.ID}, After: after, Limit: limit}
						if tc.status != nil {
							f.Statuses = []domain.Status{*tc.status}
						}
						if tc.who != nil {
							f.AssigneeIDs = []string{*tc.who}
						}
						return db.Tasks().FindTasks(ctx, f)
					})
					if want == nil {
						want = []domain.Task{}
					}
					if got == nil {
						got = []domain.Task{}
					}
					equal(t, "pages", got, want)
				}
			})
		}
	})
}

func TestIdempotencyStore(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Idempotency()
		ws := newWorkspace(t, db)
		k := newKey(t, db, newUser(t, db, ws, "i@x.test", base), 0, base)
		rec := edgeport.IdempotencyRecord{APIKeyID: k.ID, Key: "k", Method: "POST", Path: "/v1/projects", BodyHash: "h", CreatedAt: base}
		old, lease := base.Add(-24*time.Hour), base.Add(-2*time.Minute)

		if held, err := s.BeginIdempotent(ctx, rec, old, lease); err != nil || held != nil {
			t.Fatalf("first claim: %v %v", held, err)
		}
		held, err := s.BeginIdempotent(ctx, rec, old, lease)
		if err != nil || held == nil || held.Done {
			t.Fatalf("second claim must see a running holder: %+v %v", held, err)
		}
		if err := s.CompleteIdempotent(ctx, k.ID, "k", 201, []byte(`{"ok":true}`)); err != nil {
			t.Fatal(err)
		}
		held, _ = s.BeginIdempotent(ctx, rec, old, lease)
		if held == nil || !held.Done || held.Status != 201 || string(held.Body) != `{"ok":true}` || held.BodyHash != "h" || held.Path != "/v1/projects" {
			t.Fatalf("done holder: %+v", held)
		}
		// Completed records outlive the running lease, but not the window.
		if held, _ := s.BeginIdempotent(ctx, rec, old, base.Add(time.Hour)); held == nil {
			t.Fatal("a completed record was dropped by the running lease")
		}
		if held, _ := s.BeginIdempotent(ctx, rec, base.Add(time.Second), lease); held != nil {
			t.Fatal("an expired record was not discarded")
		}
		// Release frees a running key (and only a running one).
		rec.Key = "r"
		_, _ = s.BeginIdempotent(ctx, rec, old, lease)
		if err := s.ReleaseIdempotent(ctx, k.ID, "r"); err != nil {
			t.Fatal(err)
		}
		if held, _ := s.BeginIdempotent(ctx, rec, old, lease); held != nil {
			t.Fatal("a released key is still held")
		}
		n, err := s.PurgeIdempotent(ctx, base.Add(time.Second))
		if err != nil || n != 2 {
			t.Fatalf("purge: %d %v", n, err)
		}
	})
}

// A row that breaks a task's invariants is never handed to the core as a
// task: the read fails with an error that is no domain error, so the edges
// answer internal_error rather than show it.
func TestCorruptTaskRowIsRefused(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws := newWorkspace(t, db)
		p := newProject(t, db, ws, "CR", base)
		task := newTask(t, db, p, domain.TaskFields{Title: domain.Set("T")}, base)
		if err := db.Gorm().Exec("UPDATE tasks SET title = '' WHERE id = ?", task.ID).Error; err != nil {
			t.Fatal(err)
		}
		_, err := db.Tasks().FindTaskByID(ctx, ws.ID, task.ID)
		if _, public := domain.AsError(err); err == nil || public {
			t.Fatalf("FindTaskByID of a corrupt row: %v", err)
		}
		if _, err := db.Tasks().FindTasks(ctx, ports.TaskFilter{WorkspaceID: ws.ID, ProjectIDs: []string{p.ID}, Limit: 10}); err == nil {
			t.Fatal("FindTasks handed out a corrupt row")
		}
	})
}
