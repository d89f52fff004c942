package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

func TestAPIKeyStore(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.APIKeys()
		ws := newWorkspace(t, db)
		u := newUser(t, db, ws, "ada@example.com", base)
		k := newKey(t, db, u, 720*time.Hour, base)
		if k.ExpiresAt == nil {
			t.Fatal("fixture key has no expiry")
		}

		t.Run("find by hash returns the key and its user", func(t *testing.T) {
			counter := storetest.CountStatements(db)
			gotKey, gotUser, err := s.FindAPIKeyByHash(ctx, k.SecretHash)
			if err != nil {
				t.Fatalf("FindAPIKeyByHash: %v", err)
			}
			equal(t, "key", gotKey, k)
			equal(t, "user", gotUser, u)
			if counter.N() != 1 {
				t.Fatalf("FindAPIKeyByHash ran %d statements: %q", counter.N(), counter.Statements())
			}
			_, _, err = s.FindAPIKeyByHash(ctx, domain.HashSecret("wtk_unknown"))
			wantCode(t, err, domain.CodeNotFound, "")
		})

		t.Run("find by id", func(t *testing.T) {
			got, err := s.FindAPIKeyByID(ctx, k.ID)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "key", got, k)
			_, err = s.FindAPIKeyByID(ctx, "key_absent")
			wantError(t, err, domain.CodeNotFound, "", "No such api_key: 'key_absent'")
		})

		t.Run("secret hashes are unique", func(t *testing.T) {
			dup := k
			dup.ID = domain.NewID(domain.PrefixAPIKey)
			if err := s.CreateAPIKey(ctx, dup); err == nil {
				t.Fatal("a second key with the same hash was stored")
			}
		})

		t.Run("a key's user must be of the key's workspace", func(t *testing.T) {
			other := newWorkspace(t, db)
			bad, _, err := domain.NewAPIKey(domain.NewID(domain.PrefixAPIKey), u, domain.APIKeyFields{Name: domain.Set("other")}, base)
			if err != nil {
				t.Fatal(err)
			}
			bad.WorkspaceID = other.ID
			if err := s.CreateAPIKey(ctx, bad); err == nil {
				t.Fatal("a key of one workspace was stored for a user of another")
			}
		})

		t.Run("list by user, oldest first", func(t *testing.T) {
			u2 := newUser(t, db, ws, "grace@example.com", base)
			later := newKey(t, db, u2, 0, base.Add(time.Second))
			early := newKey(t, db, u2, 0, base.Add(-time.Second))
			tie1, tie2 := newKey(t, db, u2, 0, base), newKey(t, db, u2, 0, base)
			want := []domain.APIKey{early, tie1, tie2, later}
			sortByPosition(want, func(k domain.APIKey) domain.Position { return domain.Position{At: k.CreatedAt, ID: k.ID} })
			got, err := s.FindAPIKeysByUser(ctx, u2.ID)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "keys", got, want)
			none, err := s.FindAPIKeysByUser(ctx, "usr_absent")
			if err != nil || none == nil || len(none) != 0 {
				t.Fatalf("keys of an absent user = %v, %v; want an empty slice", none, err)
			}
		})

		t.Run("revoke", func(t *testing.T) {
			k := newKey(t, db, u, 0, base)
			at := base.Add(time.Hour + time.Microsecond)
			got, err := s.RevokeAPIKey(ctx, k.ID, at)
			if err != nil {
				t.Fatalf("RevokeAPIKey: %v", err)
			}
			want := k
			want.RevokedAt = &at
			equal(t, "revoked key", got, want)

			// A second revocation keeps the first instant.
			got, err = s.RevokeAPIKey(ctx, k.ID, at.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "revoked twice", got, want)
			stored, _, err := s.FindAPIKeyByHash(ctx, k.SecretHash)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "stored revoked key", stored, want)

			_, err = s.RevokeAPIKey(ctx, "key_absent", at)
			wantCode(t, err, domain.CodeNotFound, "")
		})

		t.Run("touch writes at most once a minute", func(t *testing.T) {
			k := newKey(t, db, u, 0, base)
			lastUsed := func() *time.Time {
				t.Helper()
				got, err := s.FindAPIKeyByID(ctx, k.ID)
				if err != nil {
					t.Fatal(err)
				}
				return got.LastUsedAt
			}
			if lastUsed() != nil {
				t.Fatal("a new key has last_used_at")
			}
			t0 := base.Add(time.Hour)
			steps := []struct {
				at   time.Time
				want time.Time
			}{
				{t0, t0},                  // first use is recorded
				{t0.Add(time.Second), t0}, // within a minute: no write
				{t0.Add(time.Minute - time.Microsecond), t0},    // still within
				{t0.Add(time.Minute), t0.Add(time.Minute)},      // a minute later: written
				{t0.Add(90 * time.Second), t0.Add(time.Minute)}, // within a minute of that
				{t0.Add(3 * time.Minute), t0.Add(3 * time.Minute)},
			}
			for i, st := range steps {
				if err := s.TouchAPIKey(ctx, k.ID, st.at); err != nil {
					t.Fatalf("step %d: TouchAPIKey: %v", i, err)
				}
				got := lastUsed()
				if got == nil || !got.Equal(st.want) {
					t.Fatalf("step %d: touch at %v left last_used_at %v, want %v", i, st.at, got, st.want)
				}
			}
			if err := s.TouchAPIKey(ctx, "key_absent", t0); err != nil {
				t.Fatalf("touching an absent key: %v", err)
			}
		})
	})
}
