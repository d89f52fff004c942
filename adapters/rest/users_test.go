package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

func TestMe(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		for _, m := range []apitest.Member{e.Admin, e.Member, e.Guest, e.Other} {
			res := e.Get("/v1/users/me", m.Key)
			res.ExpectStatus(t, http.StatusOK)
			if got := keysOf(res.JSON); got != "created_at,email,id,name,object,role" {
				t.Fatalf("fields: %s", got)
			}
			u := m.User
			if res.Str("id") != u.ID || res.Str("object") != "user" || res.Str("email") != u.Email ||
				res.Str("name") != u.Name || res.Str("role") != string(u.Role) ||
				res.Str("created_at") != u.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000Z") {
				t.Fatalf("me: %s", res.Body)
			}
			for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Request-Id"} {
				if res.Header.Get(h) == "" {
					t.Fatalf("missing header %s", h)
				}
			}
		}
	})
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		do := func(auth string) *apitest.Response {
			return e.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/users/me", Header: map[string]string{"Authorization": auth}})
		}
		e.Get("/v1/users/me", "").ExpectError(t, 401, "missing_api_key", "")
		do("Bearer ").ExpectError(t, 401, "missing_api_key", "")
		do("Bearer").ExpectError(t, 401, "missing_api_key", "")
		do("Basic "+e.Admin.Key).ExpectError(t, 401, "missing_api_key", "")
		do(e.Admin.Key).ExpectError(t, 401, "missing_api_key", "")
		do("Bearer wtk_"+strings.Repeat("a", 40)).ExpectError(t, 401, "invalid_api_key", "")
		do("Bearer not-a-key").ExpectError(t, 401, "invalid_api_key", "")
		do("Bearer "+e.Admin.Key+"x").ExpectError(t, 401, "invalid_api_key", "")
		// The scheme is case-insensitive.
		do("bearer "+e.Admin.Key).ExpectStatus(t, 200)
		do("BEARER "+e.Admin.Key).ExpectStatus(t, 200)
		// A 401 carries no rate-limit headers: it belongs to no key.
		if r := do("Bearer not-a-key"); r.Header.Get("X-RateLimit-Limit") != "" {
			t.Fatal("401 must not carry rate-limit headers")
		}
	})
}

func TestExpiredAndRevokedKeys(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		ctx := context.Background()
		_, secret, err := e.App.Admin.CreateKey(ctx, e.Member.User.ID, domain.APIKeyFields{Name: domain.Set("short"), ExpiresAt: domain.Set(e.Clock.Now().Add(time.Hour))})
		if err != nil {
			t.Fatal(err)
		}
		e.Get("/v1/users/me", secret).ExpectStatus(t, 200)
		e.Clock.Advance(time.Hour)
		e.Get("/v1/users/me", secret).ExpectError(t, 401, "invalid_api_key", "")

		// Revoked in this process: refused at once.
		e.Get("/v1/users/me", e.Guest.Key).ExpectStatus(t, 200)
		keys, _ := e.App.Admin.ListKeys(ctx, e.Guest.User.ID)
		if _, err := e.App.Admin.RevokeKey(ctx, keys[0].ID); err != nil {
			t.Fatal(err)
		}
		e.Get("/v1/users/me", e.Guest.Key).ExpectError(t, 401, "invalid_api_key", "")
	})
}

// Keys are cached so that resolving one costs no round trip per request; a
// revocation made by another process (here: another App on the same
// database) takes effect within the cache TTL, well inside 10 seconds.
func TestRevocationReachesOtherProcessesWithin10s(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		e.Get("/v1/users/me", e.Member.Key).ExpectStatus(t, 200)

		other := appOver(db, e.Clock)
		keys, err := other.Admin.ListKeys(context.Background(), e.Member.User.ID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys: %v %v", keys, err)
		}
		if _, err := other.Admin.RevokeKey(context.Background(), keys[0].ID); err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(10 * time.Second)
		e.Get("/v1/users/me", e.Member.Key).ExpectError(t, 401, "invalid_api_key", "")
	})
}

func TestLastUsedAtWrittenAtMostOncePerMinute(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		lastUsed := func() *time.Time {
			keys, err := e.App.Admin.ListKeys(context.Background(), e.Member.User.ID)
			if err != nil {
				t.Fatal(err)
			}
			return keys[0].LastUsedAt
		}
		if lastUsed() != nil {
			t.Fatal("an unused key has last_used_at")
		}
		first := domain.Timestamp(e.Clock.Now())
		e.Get("/v1/users/me", e.Member.Key).ExpectStatus(t, 200)
		if got := lastUsed(); got == nil || !got.Equal(first) {
			t.Fatalf("last_used_at %v, want %v", got, first)
		}
		counter := storetest.CountStatements(db)
		e.Clock.Advance(30 * time.Second)
		for i := 0; i < 5; i++ {
			e.Get("/v1/users/me", e.Member.Key).ExpectStatus(t, 200)
		}
		if got := lastUsed(); !got.Equal(first) {
			t.Fatalf("last_used_at rewritten within a minute: %v", got)
		}
		for _, s := range counter.Statements() {
			if strings.Contains(strings.ToUpper(s), "UPDATE") {
				t.Fatalf("an UPDATE was issued within the minute: %s", s)
			}
		}
		e.Clock.Advance(31 * time.Second)
		e.Get("/v1/users/me", e.Member.Key).ExpectStatus(t, 200)
		if got := lastUsed(); got == nil || !got.After(first) {
			t.Fatalf("last_used_at not refreshed after a minute: %v", got)
		}
	})
}

func TestListUsers(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		res := e.Get("/v1/users", e.Guest.Key)
		res.ExpectStatus(t, 200)
		var emails []string
		for _, it := range res.JSON["data"].([]any) {
			emails = append(emails, it.(map[string]any)["email"].(string))
		}
		if strings.Join(emails, ",") != "ada@acme.test,mel@acme.test,gus@acme.test" {
			t.Fatalf("members of the workspace, oldest first: %v", emails)
		}
		for i := 0; i < 42; i++ {
			e.NewMember(e.Workspace.ID, fmt.Sprintf("u%d@acme.test", i), domain.RoleGuest)
		}
		pages := pageThrough(t, e, "/v1/users", e.Guest.Key)
		if len(pages) != 3 || len(pages[0]) != 20 || len(pages[1]) != 20 || len(pages[2]) != 5 {
			t.Fatalf("want 20/20/5, got %d pages", len(pages))
		}
		seen := map[string]bool{}
		for _, p := range pages {
			for _, id := range p {
				if seen[id] || id == e.Other.User.ID {
					t.Fatalf("%s repeated or foreign", id)
				}
				seen[id] = true
			}
		}
		for _, bad := range []string{"0", "101", "abc"} {
			e.Get("/v1/users?limit="+bad, e.Guest.Key).ExpectError(t, 400, "validation_failed", "limit")
		}
		e.Get("/v1/users?cursor=AAAA", e.Guest.Key).ExpectError(t, 400, "validation_failed", "cursor")
		e.Get("/v1/users", "").ExpectError(t, 401, "missing_api_key", "")
	})
}
