package store_test

import (
	"context"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

func TestWorkspaceStore(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Workspaces()

		n, err := s.CountWorkspaces(ctx)
		if err != nil || n != 0 {
			t.Fatalf("CountWorkspaces on an empty database = %d, %v; want 0", n, err)
		}

		w := newWorkspace(t, db)
		got, err := s.FindWorkspaceByID(ctx, w.ID)
		if err != nil {
			t.Fatalf("FindWorkspaceByID: %v", err)
		}
		equal(t, "workspace", got, w)

		newWorkspace(t, db)
		if n, err := s.CountWorkspaces(ctx); err != nil || n != 2 {
			t.Fatalf("CountWorkspaces = %d, %v; want 2", n, err)
		}

		_, err = s.FindWorkspaceByID(ctx, "wsp_absent")
		wantError(t, err, domain.CodeNotFound, "", "No such workspace: 'wsp_absent'")

		if err := s.CreateWorkspace(ctx, w); err == nil {
			t.Fatal("CreateWorkspace with a taken id succeeded")
		}
	})
}
