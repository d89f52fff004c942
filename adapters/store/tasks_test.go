package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

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

// A keyed request's key and answer are written only inside its change's
// transaction, commit or roll back with it, and take the place of an
// expired answer or of a claim an older version left running, never of a
// live answer: the loser's claim fails with idempotency_key_in_use and its
// request is marked Taken.
func TestIdempotencyStore(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Idempotency()
		ws := newWorkspace(t, db)
		k := newKey(t, db, newUser(t, db, ws, "i@x.test", base), 0, base)
		old := base.Add(-24 * time.Hour)
		req := func(key string, at time.Time) *ports.KeyedRequest {
			return &ports.KeyedRequest{APIKeyID: k.ID, Key: key, Method: "POST", Path: "/v1/projects", BodyHash: "h", Role: "member", At: at}
		}
		commit := func(r *ports.KeyedRequest, body string, fail error) error {
			return db.InTx(ctx, func(ctx context.Context) error {
				if err := s.ClaimKey(ctx, r); err != nil {
					return err
				}
				if err := s.CommitAnswer(ctx, r, ports.Answer{Status: 201, Body: []byte(body)}); err != nil {
					return err
				}
				return fail
			})
		}

		if err := s.ClaimKey(ctx, req("k", base)); err == nil {
			t.Fatal("a key was claimed outside a transaction")
		}
		if err := s.CommitAnswer(ctx, req("k", base), ports.Answer{Status: 201}); err == nil {
			t.Fatal("an answer was committed outside a transaction")
		}
		if err := db.InTx(ctx, func(ctx context.Context) error {
			return s.CommitAnswer(ctx, req("k", base), ports.Answer{Status: 201})
		}); err == nil {
			t.Fatal("an answer was committed for a key its transaction did not claim")
		}
		if held, err := s.FindIdempotent(ctx, k.ID, "k", old); err != nil || held != nil {
			t.Fatalf("before any commit: %+v %v", held, err)
		}
		// Rolled back with its change: no answer.
		rollback := errors.New("the change failed")
		if err := commit(req("k", base), `{"n":0}`, rollback); !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if held, _ := s.FindIdempotent(ctx, k.ID, "k", old); held != nil {
			t.Fatalf("a rolled-back answer is held: %+v", held)
		}
		if err := commit(req("k", base), `{"ok":true}`, nil); err != nil {
			t.Fatal(err)
		}
		held, err := s.FindIdempotent(ctx, k.ID, "k", old)
		if err != nil || held == nil || held.Status != 201 || string(held.Body) != `{"ok":true}` || held.BodyHash != "h" ||
			held.Path != "/v1/projects" || held.Role != "member" {
			t.Fatalf("committed answer: %+v %v", held, err)
		}
		// A second commit of a live key loses, and rolls its change back.
		second := req("k", base.Add(time.Minute))
		if err := commit(second, `{"n":2}`, nil); !domain.IsCode(err, domain.CodeIdempotencyKeyInUse) || !second.Taken() {
			t.Fatalf("second commit: %v, taken %v", err, second.Taken())
		}
		if held, _ := s.FindIdempotent(ctx, k.ID, "k", old); held == nil || string(held.Body) != `{"ok":true}` {
			t.Fatalf("the first answer was replaced: %+v", held)
		}
		// Past the window the answer is not found, and a new one replaces it.
		if held, _ := s.FindIdempotent(ctx, k.ID, "k", base.Add(time.Second)); held != nil {
			t.Fatal("an expired answer was found")
		}
		later := req("k", base.Add(24*time.Hour+time.Second))
		if err := commit(later, `{"n":3}`, nil); err != nil || later.Taken() {
			t.Fatalf("commit over an expired answer: %v", err)
		}
		if held, _ := s.FindIdempotent(ctx, k.ID, "k", base); held == nil || string(held.Body) != `{"n":3}` {
			t.Fatalf("after the expired answer: %+v", held)
		}
		// A claim left running by an older version is no answer, and gives
		// way to one.
		if err := db.Gorm().Exec(`INSERT INTO idempotency_keys (api_key_id, idempotency_key, method, path, body_hash, role, done, created_at)
			VALUES (?, 'legacy', 'POST', '/v1/projects', 'h', 'member', ?, ?)`, k.ID, false, store.Time(base)).Error; err != nil {
			t.Fatal(err)
		}
		if held, _ := s.FindIdempotent(ctx, k.ID, "legacy", old); held != nil {
			t.Fatalf("a running claim is an answer: %+v", held)
		}
		if err := commit(req("legacy", base), `{"n":4}`, nil); err != nil {
			t.Fatal(err)
		}
		if held, _ := s.FindIdempotent(ctx, k.ID, "legacy", old); held == nil || string(held.Body) != `{"n":4}` {
			t.Fatalf("after the running claim: %+v", held)
		}
		n, err := s.PurgeIdempotent(ctx, base.Add(time.Second))
		if err != nil || n != 1 {
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
