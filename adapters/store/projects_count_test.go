package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

func TestAddTaskCount(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Projects()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		p := newProject(t, db, ws, "CNT", base)

		// Concurrent increments and decrements: no update is lost.
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				delta := 1
				if i%4 == 3 {
					delta = -1 // every fourth undoes a previous one: net +10 over 20
					if err := s.AddTaskCount(ctx, ws.ID, p.ID, 2); err != nil {
						t.Error(err)
						return
					}
				}
				if err := s.AddTaskCount(ctx, ws.ID, p.ID, delta); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got, err := s.FindProjectByID(ctx, ws.ID, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := p
		want.TaskCount = 15*1 + 5*(2-1)
		equal(t, "project after counting (updated_at untouched)", got, want)

		wantCode(t, s.AddTaskCount(ctx, other.ID, p.ID, 1), domain.CodeNotFound, "")
		wantCode(t, s.AddTaskCount(ctx, ws.ID, "prj_absent", 1), domain.CodeNotFound, "")
		if err := s.AddTaskCount(ctx, ws.ID, p.ID, -want.TaskCount-1); err == nil {
			t.Fatal("task_count went negative")
		}
		if got, _ := s.FindProjectByID(ctx, ws.ID, p.ID); got.TaskCount != want.TaskCount {
			t.Fatalf("task_count = %d after refused updates, want %d", got.TaskCount, want.TaskCount)
		}
	})
}

// The counts by status follow every insertion, status change and deletion
// of a task, whoever makes it (triggers of the tasks table), in its
// transaction: a rolled-back change leaves them as they were.
func TestStatusCountsFollowEveryTaskChange(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws := newWorkspace(t, db)
		p, q := newProject(t, db, ws, "STA", base), newProject(t, db, ws, "STB", base)
		counts := func(p domain.Project) domain.StatusCounts {
			t.Helper()
			got, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got.StatusCounts
		}
		// task_count is the services' to keep (AddTaskCount), as they do.
		add := func(p domain.Project, in domain.TaskFields) domain.Task {
			t.Helper()
			task := newTask(t, db, p, in, base)
			if err := db.Projects().AddTaskCount(ctx, ws.ID, p.ID, 1); err != nil {
				t.Fatal(err)
			}
			return task
		}
		var tasks []domain.Task
		for _, st := range []domain.Status{domain.StatusOpen, domain.StatusOpen, domain.StatusInProgress, domain.StatusDone} {
			tasks = append(tasks, add(p, domain.TaskFields{Title: domain.Set("t"), Status: domain.Set(st)}))
		}
		add(q, domain.TaskFields{Title: domain.Set("elsewhere")})
		equal(t, "after insertions", counts(p), domain.StatusCounts{Open: 2, InProgress: 1, Done: 1})

		moved := tasks[0]
		moved.Status = domain.StatusArchived
		renamed := tasks[1]
		renamed.Title = "renamed"
		for _, u := range []domain.Task{moved, renamed} {
			if err := db.Tasks().UpdateTask(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Tasks().DeleteTask(ctx, ws.ID, tasks[2].ID); err != nil {
			t.Fatal(err)
		}
		if err := db.Projects().AddTaskCount(ctx, ws.ID, p.ID, -1); err != nil {
			t.Fatal(err)
		}
		equal(t, "after a move, a rename and a deletion", counts(p), domain.StatusCounts{Open: 1, Done: 1, Archived: 1})
		equal(t, "the other project", counts(q), domain.StatusCounts{Open: 1})

		_ = db.InTx(ctx, func(ctx context.Context) error {
			back := tasks[3]
			back.Status = domain.StatusOpen
			if err := db.Tasks().UpdateTask(ctx, back); err != nil {
				t.Fatal(err)
			}
			return errors.New("roll back")
		})
		equal(t, "after a rolled-back move", counts(p), domain.StatusCounts{Open: 1, Done: 1, Archived: 1})
	})
}

func TestFindProjectByIDForUpdate(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Projects()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		p := newProject(t, db, ws, "LOCK", base)

		counter := storetest.CountStatements(db)
		err := db.InTx(ctx, func(ctx context.Context) error {
			got, err := s.FindProjectByIDForUpdate(ctx, ws.ID, p.ID)
			equal(t, "locked project", got, p)
			return err
		})
		if err != nil || counter.N() != 1 {
			t.Fatalf("FindProjectByIDForUpdate: %v, %d statements %q", err, counter.N(), counter.Statements())
		}
		_ = db.InTx(ctx, func(ctx context.Context) error {
			_, err := s.FindProjectByIDForUpdate(ctx, other.ID, p.ID)
			wantCode(t, err, domain.CodeNotFound, "")
			return nil
		})

		// Two read-modify-write transactions on one project serialise: the
		// second reads what the first wrote, so no rename is lost.
		var wg sync.WaitGroup
		var renames atomic.Int32
		for i := range 2 {
			wg.Go(func() {
				err := db.InTx(ctx, func(ctx context.Context) error {
					cur, err := s.FindProjectByIDForUpdate(ctx, ws.ID, p.ID)
					if err != nil {
						return err
					}
					time.Sleep(50 * time.Millisecond) // give the other transaction time to collide
					upd, _, err := cur.Apply(domain.ProjectFields{Name: domain.Set(cur.Name + "+" + itoa(i))}, base.Add(time.Hour))
					if err != nil {
						return err
					}
					renames.Add(1)
					return s.UpdateProject(ctx, upd)
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got, err := s.FindProjectByID(ctx, ws.ID, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if renames.Load() != 2 || (got.Name != p.Name+"+0+1" && got.Name != p.Name+"+1+0") {
			t.Fatalf("name after two serialised renames = %q", got.Name)
		}
	})
}
