package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

func TestProjectStore(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Projects()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)

		p := newProject(t, db, ws, "ABC", base)
		got, err := s.FindProjectByID(ctx, ws.ID, p.ID)
		if err != nil {
			t.Fatalf("FindProjectByID: %v", err)
		}
		equal(t, "project", got, p)
		if !got.UpdatedAt.Equal(got.CreatedAt) || got.TaskCount != 0 {
			t.Fatalf("a new project has updated_at %v (created %v), task_count %d", got.UpdatedAt, got.CreatedAt, got.TaskCount)
		}

		t.Run("not found", func(t *testing.T) {
			_, err := s.FindProjectByID(ctx, ws.ID, "prj_absent")
			wantError(t, err, domain.CodeNotFound, "", "No such project: 'prj_absent'")
		})

		t.Run("another workspace's project is not found", func(t *testing.T) {
			_, err := s.FindProjectByID(ctx, other.ID, p.ID)
			wantCode(t, err, domain.CodeNotFound, "")
		})

		t.Run("key taken in the workspace", func(t *testing.T) {
			err := s.CreateProject(ctx, makeProject(t, ws, "ABC", base))
			wantError(t, err, domain.CodeAlreadyExists, "key", "A project with key 'ABC' already exists in this workspace.")
			// Keys are unique per workspace only.
			newProject(t, db, other, "ABC", base)
		})

		t.Run("by ids", func(t *testing.T) {
			p2 := newProject(t, db, ws, "DEF", base.Add(time.Minute))
			foreign := newProject(t, db, other, "XYZ", base)
			got, err := s.FindProjectsByIDs(ctx, ws.ID, []string{foreign.ID, p2.ID, "prj_absent", p.ID})
			if err != nil {
				t.Fatal(err)
			}
			sortByPosition(got, domain.Project.Position)
			equal(t, "FindProjectsByIDs", got, []domain.Project{p, p2})
			none, err := s.FindProjectsByIDs(ctx, ws.ID, []string{})
			if err != nil || none == nil || len(none) != 0 {
				t.Fatalf("FindProjectsByIDs(empty) = %v, %v; want an empty slice", none, err)
			}
		})

		t.Run("update", func(t *testing.T) {
			upd, changes, err := p.Apply(domain.ProjectFields{Name: domain.Set("Renamed")}, base.Add(90*time.Second+7*time.Microsecond))
			if err != nil || len(changes) != 1 {
				t.Fatalf("Apply: %v %v", changes, err)
			}
			upd.TaskCount = 99 // not a mutable field: must not be written
			if err := s.UpdateProject(ctx, upd); err != nil {
				t.Fatalf("UpdateProject: %v", err)
			}
			got, err := s.FindProjectByID(ctx, ws.ID, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := p
			want.Name, want.UpdatedAt = "Renamed", upd.UpdatedAt
			equal(t, "updated project", got, want)

			missing := upd
			missing.ID = "prj_absent"
			wantCode(t, s.UpdateProject(ctx, missing), domain.CodeNotFound, "")
			foreign := upd
			foreign.WorkspaceID = other.ID
			wantCode(t, s.UpdateProject(ctx, foreign), domain.CodeNotFound, "")
			if got, _ := s.FindProjectByID(ctx, ws.ID, p.ID); got.Name != "Renamed" {
				t.Fatalf("an update through another workspace changed the project: %+v", got)
			}
		})
	})
}

func TestFindProjectsPages(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		var want []domain.Project
		for i, at := range creationTimes() {
			key := "K" + itoa(i)
			want = append(want, newProject(t, db, ws, key, at))
			newProject(t, db, other, key, at)
		}
		sortByPosition(want, domain.Project.Position)
		for _, size := range []int{1, 2, 3, len(want) - 1, len(want), 100} {
			got := collectPages(t, size, domain.Project.Position, func(after *domain.Position, limit int) ([]domain.Project, error) {
				return db.Projects().FindProjects(context.Background(), ports.ProjectFilter{WorkspaceID: ws.ID, After: after, Limit: limit})
			})
			equal(t, "projects across pages of "+itoa(size), got, want)
		}

		// A position between rows (as left by a deleted row) continues with
		// the next row after it.
		mid := want[4]
		after := domain.Position{At: mid.CreatedAt, ID: mid.ID + "!"}
		got, err := db.Projects().FindProjects(context.Background(), ports.ProjectFilter{WorkspaceID: ws.ID, After: &after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "after a vanished position", got, want[5:])

		empty, err := db.Projects().FindProjects(context.Background(), ports.ProjectFilter{WorkspaceID: "wsp_none", Limit: 10})
		if err != nil || empty == nil || len(empty) != 0 {
			t.Fatalf("empty list = %v, %v; want an empty slice", empty, err)
		}
	})
}

// TestFindProjectByIDIsOneStatement guards the hot path of most task calls.
func TestFindProjectByIDIsOneStatement(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ws := newWorkspace(t, db)
		p := newProject(t, db, ws, "HOT", base)
		counter := storetest.CountStatements(db)
		for _, id := range []string{p.ID, "prj_absent"} {
			counter.Reset()
			_, _ = db.Projects().FindProjectByID(context.Background(), ws.ID, id)
			if counter.N() != 1 {
				t.Fatalf("FindProjectByID(%s) ran %d statements: %q", id, counter.N(), counter.Statements())
			}
		}
		// Inside a transaction too.
		counter.Reset()
		err := db.InTx(context.Background(), func(ctx context.Context) error {
			_, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
			return err
		})
		if err != nil || counter.N() != 1 {
			t.Fatalf("FindProjectByID in a transaction: %v, %d statements: %q", err, counter.N(), counter.Statements())
		}
	})
}

// TestCreateProjectRace: two creations of one key at once; exactly one wins
// and the other learns the key is taken.
func TestCreateProjectRace(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ws := newWorkspace(t, db)
		for round := range 10 {
			key := "RACE" + itoa(round)
			var (
				wg    sync.WaitGroup
				start = make(chan struct{})
				errs  = make([]error, 2)
			)
			for i := range errs {
				p := makeProject(t, ws, key, base)
				wg.Go(func() {
					<-start
					errs[i] = db.Projects().CreateProject(context.Background(), p)
				})
			}
			close(start)
			wg.Wait()
			won := slices.IndexFunc(errs, func(err error) bool { return err == nil })
			if won < 0 {
				t.Fatalf("round %d: both failed: %v", round, errs)
			}
			wantCode(t, errs[1-won], domain.CodeAlreadyExists, "key")
		}
		all, err := db.Projects().FindProjects(context.Background(), ports.ProjectFilter{WorkspaceID: ws.ID, Limit: 100})
		if err != nil || len(all) != 10 {
			t.Fatalf("projects after the races: %d, %v; want 10", len(all), err)
		}
	})
}
