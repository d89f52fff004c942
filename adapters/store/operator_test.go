package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// The operator's look-ups act above tenancy: every workspace, and a user
// by email (any case) in every workspace, oldest first.
func TestOperatorLookups(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, b := newWorkspace(t, db), newWorkspace(t, db)
		ua := newUser(t, db, a, "Ada@example.com", base)
		ub := newUser(t, db, b, "ada@example.com", base.Add(time.Second))
		newUser(t, db, b, "grace@example.com", base)

		ws, err := db.Workspaces().ListWorkspaces(ctx)
		if err != nil || len(ws) != 2 {
			t.Fatalf("ListWorkspaces: %v, %v", ws, err)
		}
		users, err := db.Users().FindUsersByEmailAnyWorkspace(ctx, " ADA@example.com ")
		if err != nil || len(users) != 2 || users[0].ID != ua.ID || users[1].ID != ub.ID {
			t.Fatalf("FindUsersByEmailAnyWorkspace: %v, %v; want %s then %s", users, err, ua.ID, ub.ID)
		}
		if users, err := db.Users().FindUsersByEmailAnyWorkspace(ctx, "nobody@example.com"); err != nil || len(users) != 0 {
			t.Fatalf("an unknown email: %v, %v", users, err)
		}
	})
}
