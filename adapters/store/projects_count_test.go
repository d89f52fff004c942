package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

func TestAddTaskCounts(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Projects()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		p := newProject(t, db, ws, "CNT", base)
		create := domain.StatusCounts{Open: 1}
		move := domain.StatusCounts{Open: -1, Done: 1} // a status change: the total stays
		remove := domain.StatusCounts{Done: -1}

		// Concurrent creations, moves and deletions: no update is lost.
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				steps := []domain.StatusCounts{create}
				switch i % 4 {
				case 1:
					steps = append(steps, move)
				case 3:
					steps = append(steps, move, remove)
				}
				for _, d := range steps {
					if err := s.AddTaskCounts(ctx, ws.ID, p.ID, d); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		got, err := s.FindProjectByID(ctx, ws.ID, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := p
		want.TaskCount = 20 - 5
		want.StatusCounts = domain.StatusCounts{Open: 10, Done: 5}
		equal(t, "project after counting (updated_at untouched)", got, want)

		wantCode(t, s.AddTaskCounts(ctx, other.ID, p.ID, create), domain.CodeNotFound, "")
		wantCode(t, s.AddTaskCounts(ctx, ws.ID, "prj_absent", create), domain.CodeNotFound, "")
		if err := s.AddTaskCounts(ctx, ws.ID, p.ID, domain.StatusCounts{Archived: -1}); err == nil {
			t.Fatal("archived_count went negative")
		}
		if got, _ := s.FindProjectByID(ctx, ws.ID, p.ID); got.TaskCount != want.TaskCount || got.StatusCounts != want.StatusCounts {
			t.Fatalf("counts = %d %+v after a refused update, want %d %+v", got.TaskCount, got.StatusCounts, want.TaskCount, want.StatusCounts)
		}
	})
}

func TestFindProjectByIDForUpdate(t *testing.T) {
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
