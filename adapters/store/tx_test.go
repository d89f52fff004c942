package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

func TestInTx(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws := newWorkspace(t, db)
		boom := errors.New("boom")

		t.Run("an error rolls everything back", func(t *testing.T) {
			w2, _ := domain.NewWorkspace(domain.NewID(domain.PrefixWorkspace), "Rolled back", base)
			p := makeProject(t, ws, "RB", base)
			err := db.InTx(ctx, func(ctx context.Context) error {
				if err := db.Workspaces().CreateWorkspace(ctx, w2); err != nil {
					return err
				}
				if err := db.Projects().CreateProject(ctx, p); err != nil {
					return err
				}
				// The transaction sees its own writes.
				if _, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID); err != nil {
					t.Errorf("inside the transaction: %v", err)
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("InTx = %v, want fn's error", err)
			}
			_, err = db.Workspaces().FindWorkspaceByID(ctx, w2.ID)
			wantCode(t, err, domain.CodeNotFound, "")
			_, err = db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
			wantCode(t, err, domain.CodeNotFound, "")
		})

		t.Run("a panic rolls back", func(t *testing.T) {
			p := makeProject(t, ws, "PANIC", base)
			func() {
				defer func() {
					if recover() == nil {
						t.Error("the panic was swallowed")
					}
				}()
				_ = db.InTx(ctx, func(ctx context.Context) error {
					if err := db.Projects().CreateProject(ctx, p); err != nil {
						t.Error(err)
					}
					panic("boom")
				})
			}()
			_, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
			wantCode(t, err, domain.CodeNotFound, "")
		})

		t.Run("commit", func(t *testing.T) {
			p := makeProject(t, ws, "OK", base)
			if err := db.InTx(ctx, func(ctx context.Context) error {
				return db.Projects().CreateProject(ctx, p)
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID); err != nil {
				t.Fatalf("after commit: %v", err)
			}
		})

		t.Run("nested InTx joins the outer transaction", func(t *testing.T) {
			outer, inner := makeProject(t, ws, "OUTER", base), makeProject(t, ws, "INNER", base)
			err := db.InTx(ctx, func(ctx context.Context) error {
				if err := db.Projects().CreateProject(ctx, outer); err != nil {
					return err
				}
				err := db.InTx(ctx, func(ctx context.Context) error {
					// The outer transaction's uncommitted row is visible: same transaction.
					if _, err := db.Projects().FindProjectByID(ctx, ws.ID, outer.ID); err != nil {
						t.Errorf("nested transaction does not see the outer one's row: %v", err)
					}
					return db.Projects().CreateProject(ctx, inner)
				})
				if err != nil {
					return err
				}
				// The nested call committed nothing on its own.
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("InTx = %v", err)
			}
			for _, p := range []domain.Project{outer, inner} {
				_, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
				wantCode(t, err, domain.CodeNotFound, "")
			}
		})

		t.Run("a failed statement's error reaches the caller and rolls back", func(t *testing.T) {
			p := makeProject(t, ws, "DUPA", base)
			err := db.InTx(ctx, func(ctx context.Context) error {
				if err := db.Projects().CreateProject(ctx, p); err != nil {
					return err
				}
				dup := makeProject(t, ws, "OK", base) // taken by "commit"
				return db.Projects().CreateProject(ctx, dup)
			})
			wantCode(t, err, domain.CodeAlreadyExists, "key")
			_, err = db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
			wantCode(t, err, domain.CodeNotFound, "")
		})

		t.Run("a cancelled context ends the transaction", func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			p := makeProject(t, ws, "CANCEL", base)
			err := db.InTx(cctx, func(ctx context.Context) error {
				if err := db.Projects().CreateProject(ctx, p); err != nil {
					return err
				}
				cancel()
				return nil
			})
			if err == nil {
				t.Fatal("commit after cancellation succeeded")
			}
			_, err = db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
			wantCode(t, err, domain.CodeNotFound, "")
		})
	})
}

// TestInTxIsPerDatabase: a transaction of one database is not joined by
// calls on another.
func TestInTxIsPerDatabase(t *testing.T) {
	t.Parallel()
	a, b := storetest.SQLite(t), storetest.SQLite(t)
	wsB := newWorkspace(t, b)
	p := makeProject(t, wsB, "OTHER", base)
	err := a.InTx(context.Background(), func(ctx context.Context) error {
		if err := b.Projects().CreateProject(ctx, p); err != nil {
			return err
		}
		return errors.New("roll back a")
	})
	if err == nil {
		t.Fatal("InTx succeeded")
	}
	if _, err := b.Projects().FindProjectByID(context.Background(), wsB.ID, p.ID); err != nil {
		t.Fatalf("b's write was rolled back with a's transaction: %v", err)
	}
}
