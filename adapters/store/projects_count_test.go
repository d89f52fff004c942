package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

// Many writers of one project, some creating tasks one at a time and some
// many in one statement, others moving and deleting them, beside folds
// running all the while: the counts read afterwards are exactly the tasks
// there are, and once folded no delta is left.
func TestTaskCountsStayExactUnderConcurrentWritersAndFolds(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws := newWorkspace(t, db)
		p := newProject(t, db, ws, "CNT", base)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var folds atomic.Int32
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.FoldCounts(ctx); err != nil {
					t.Error(err)
					return
				}
				folds.Add(1)
			}
		})
		var writers sync.WaitGroup
		for w := range 6 {
			writers.Go(func() {
				for i := range 15 {
					n := 1
					if w%2 == 0 {
						n = 7
					}
					ts := make([]domain.Task, n)
					for j := range ts {
						st := []domain.Status{domain.StatusOpen, domain.StatusInProgress, domain.StatusDone}[(i+j)%3]
						task, err := domain.NewTask(domain.NewID(domain.PrefixTask), ws.ID, p.ID, domain.TaskFields{Title: domain.Set("t"), Status: domain.Set(st)}, base)
						if err != nil {
							t.Error(err)
							return
						}
						ts[j] = task
					}
					err := db.InTx(ctx, func(ctx context.Context) error {
						if err := db.Tasks().CreateTasks(ctx, ts); err != nil {
							return err
						}
						switch i % 3 {
						case 1:
							moved := ts[0]
							moved.Status = domain.StatusArchived
							return db.Tasks().UpdateTask(ctx, moved)
						case 2:
							return db.Tasks().DeleteTask(ctx, ws.ID, ts[0].ID)
						}
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		writers.Wait()
		close(stop)
		wg.Wait()
		if folds.Load() == 0 {
			t.Fatal("no fold ran beside the writers")
		}

		var want domain.StatusCounts
		for _, st := range domain.Statuses {
			var n int64
			if err := db.Gorm().Raw("SELECT count(*) FROM tasks WHERE project_id = ? AND status = ?", p.ID, string(st)).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			want = want.Add(st, int(n))
		}
		check := func(when string) {
			t.Helper()
			got, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.StatusCounts != want || got.TaskCount != want.Open+want.InProgress+want.Done+want.Archived {
				t.Fatalf("%s: task_count %d, counts %+v; the tasks are %+v", when, got.TaskCount, got.StatusCounts, want)
			}
		}
		check("after the writers")
		for {
			n, err := db.FoldCounts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		check("after the last fold")
		// The row's own task_count column is whole too, for readers of the
		// table rather than the view.
		var column int64
		if err := db.Gorm().Raw("SELECT task_count FROM projects WHERE id = ?", p.ID).Scan(&column).Error; err != nil {
			t.Fatal(err)
		}
		if int(column) != want.Open+want.InProgress+want.Done+want.Archived {
			t.Fatalf("projects.task_count %d, the tasks are %+v", column, want)
		}
		if db.Dialect() == store.DialectPostgres {
			var left int64
			if err := db.Gorm().Raw("SELECT count(*) FROM project_count_deltas").Scan(&left).Error; err != nil {
				t.Fatal(err)
			}
			if left != 0 {
				t.Fatalf("%d deltas left after folding", left)
			}
		}
	})
}

// A task creation does not wait for another of the same project, nor for
// a rename or a fold of it: none holds a lock the others need.
// (PostgreSQL: SQLite has one writer at a time.)
func TestWritersOfOneProjectDoNotWaitForEachOther(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	ctx := context.Background()
	ws := newWorkspace(t, db)
	p := newProject(t, db, ws, "LOCKS", base)
	task := func() []domain.Task {
		t.Helper()
		x, err := domain.NewTask(domain.NewID(domain.PrefixTask), ws.ID, p.ID, domain.TaskFields{Title: domain.Set("t")}, base)
		if err != nil {
			t.Fatal(err)
		}
		return []domain.Task{x}
	}
	// A first writer inserts and holds its transaction open.
	held := make(chan struct{})
	release := make(chan struct{})
	var firstErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		firstErr = db.InTx(ctx, func(ctx context.Context) error {
			if err := db.Tasks().CreateTasks(ctx, task()); err != nil {
				close(held)
				return err
			}
			close(held)
			<-release
			return nil
		})
	})
	<-held
	impatient := func(what string, f func(ctx context.Context) error) {
		t.Helper()
		err := db.InTx(ctx, func(ctx context.Context) error {
			if err := db.Conn(ctx).Exec("SET LOCAL lock_timeout = '50ms'").Error; err != nil {
				return err
			}
			return f(ctx)
		})
		if err != nil {
			t.Errorf("%s waited for the open creation: %v", what, err)
		}
	}
	impatient("a second creation", func(ctx context.Context) error { return db.Tasks().CreateTasks(ctx, task()) })
	impatient("a rename", func(ctx context.Context) error {
		cur, err := db.Projects().FindProjectByIDForUpdate(ctx, ws.ID, p.ID)
		if err != nil {
			return err
		}
		upd, _, err := cur.Apply(domain.ProjectFields{Name: domain.Set("Renamed")}, base.Add(time.Hour))
		if err != nil {
			return err
		}
		return db.Projects().UpdateProject(ctx, upd)
	})
	impatient("a fold", func(ctx context.Context) error { _, err := db.FoldCounts(ctx); return err })
	close(release)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	got, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.TaskCount != 2 || got.Name != "Renamed" {
		t.Fatalf("after two creations and a rename: task_count %d, name %q", got.TaskCount, got.Name)
	}
}

// A creation into a project of another workspace, or no project, is
// refused by the tasks' foreign key as resource_not_found, and counts
// nothing.
func TestCreateTasksRefusesAnotherWorkspacesProject(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		p := newProject(t, db, ws, "MINE", base)
		for _, c := range []struct{ workspace, project string }{{other.ID, p.ID}, {ws.ID, "prj_absent"}} {
			x, err := domain.NewTask(domain.NewID(domain.PrefixTask), c.workspace, c.project, domain.TaskFields{Title: domain.Set("t")}, base)
			if err != nil {
				t.Fatal(err)
			}
			err = db.InTx(ctx, func(ctx context.Context) error { return db.Tasks().CreateTasks(ctx, []domain.Task{x}) })
			wantCode(t, err, domain.CodeNotFound, "")
		}
		if got, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID); err != nil || got.TaskCount != 0 {
			t.Fatalf("task_count %d (%v) after refused creations", got.TaskCount, err)
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
		add := func(p domain.Project, in domain.TaskFields) domain.Task {
			t.Helper()
			return newTask(t, db, p, in, base)
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
		// PostgreSQL locks the row, then reads it through the view.
		want := 1
		if db.Dialect() == store.DialectPostgres {
			want = 2
		}
		if err != nil || counter.N() != want {
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

// A read of a project sums its own pending deltas only, by their index:
// the deltas of every other project cost it nothing. (PostgreSQL; SQLite's
// view is the row.)
func TestProjectReadsSumOnlyTheirOwnDeltas(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	for name, q := range map[string]string{
		"one":  "SELECT * FROM projects_counted WHERE workspace_id = 'wsp_x' AND id = 'prj_x'",
		"page": "SELECT * FROM projects_counted WHERE workspace_id = 'wsp_x' ORDER BY created_at, id LIMIT 21",
	} {
		var plan []string
		err := db.Gorm().Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
				return err
			}
			return tx.Raw("EXPLAIN " + q).Scan(&plan).Error
		})
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "project_count_deltas_project_idx") || strings.Contains(text, "Seq Scan") {
			t.Errorf("%s: the deltas are not read by the project's index:\n%s", name, text)
		}
	}
}
