package rest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

func idem(e *apitest.Env, key, idemKey, path, body string) *apitest.Response {
	return e.Do(apitest.Request{Method: http.MethodPost, Path: path, Key: key, Body: body, Header: map[string]string{"Idempotency-Key": idemKey}})
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		body := `{"name":"Once","key":"ONCE"}`
		first := idem(e, e.Member.Key, "k-1", "/v1/projects", body)
		first.ExpectStatus(t, 201)
		if first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatal("the first response is not a replay")
		}
		again := idem(e, e.Member.Key, "k-1", "/v1/projects", body)
		again.ExpectStatus(t, 201)
		if string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %s %v", again.Body, again.Header)
		}
		if again.Header.Get("X-Request-Id") == first.Header.Get("X-Request-Id") {
			t.Fatal("a replay is a new request with its own id")
		}
		// Nothing changed: still one project.
		if list := e.Get("/v1/projects", e.Guest.Key); len(list.JSON["data"].([]any)) != 1 {
			t.Fatalf("the replay wrote: %s", list.Body)
		}
		// Same key, other body / path: reused.
		idem(e, e.Member.Key, "k-1", "/v1/projects", `{"name":"Once","key":"ONCE" }`).ExpectError(t, 409, "idempotency_key_reused", "")
		idem(e, e.Member.Key, "k-1", "/v1/projects/"+first.Str("id")+"/tasks", `{"title":"x"}`).ExpectError(t, 409, "idempotency_key_reused", "")
		// Keys are per API key: another key may use the same string.
		idem(e, e.Admin.Key, "k-1", "/v1/projects", `{"name":"Other","key":"OTHER"}`).ExpectStatus(t, 201)
		// Only 2xx are stored: after a failure the key is free again.
		idem(e, e.Member.Key, "k-2", "/v1/projects", `{"name":"Dup","key":"ONCE"}`).ExpectError(t, 409, "resource_already_exists", "key")
		idem(e, e.Member.Key, "k-2", "/v1/projects", `{"name":"Fresh","key":"FRESH"}`).ExpectStatus(t, 201)
		// After 24 hours a key starts afresh.
		e.Clock.Advance(24*time.Hour + time.Second)
		fresh := idem(e, e.Member.Key, "k-1", "/v1/projects", `{"name":"Later","key":"LATER"}`)
		fresh.ExpectStatus(t, 201)
		if fresh.Header.Get("Idempotent-Replayed") != "" {
			t.Fatal("an expired key was replayed")
		}
		// Malformed keys.
		for _, bad := range []string{"", strings.Repeat("k", 256), "caf\u00e9", "tab\there"} {
			idem(e, e.Member.Key, bad, "/v1/projects", `{"name":"Bad","key":"BAD"}`).ExpectError(t, 400, "validation_failed", "Idempotency-Key")
		}
		idem(e, e.Member.Key, strings.Repeat("k", 255), "/v1/projects", `{"name":"Max","key":"MAXKEY"}`).ExpectStatus(t, 201)
	})
}

// While the first request runs, the same key is idempotency_key_in_use; of
// concurrent first requests exactly one runs.
func TestIdempotencyKeyInUse(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		const n = 8
		var wg sync.WaitGroup
		codes := make(chan string, n)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res := idem(e, e.Member.Key, "race", "/v1/projects", `{"name":"Race","key":"RACE"}`)
				code := res.ErrorField("code")
				if res.Status == 201 {
					code = "201"
					if res.Header.Get("Idempotent-Replayed") == "true" {
						code = "replayed"
					}
				}
				codes <- code
			}()
		}
		close(start)
		wg.Wait()
		close(codes)
		created := 0
		for c := range codes {
			switch c {
			case "201":
				created++
			case "replayed", "idempotency_key_in_use":
			default:
				t.Fatalf("unexpected outcome %s", c)
			}
		}
		if created != 1 {
			t.Fatalf("want exactly one request to run, got %d", created)
		}

		// A first request that is still running holds its key. Stand in for
		// it by claiming the key directly, as the middleware does.
		keys, _ := e.App.Admin.ListKeys(context.Background(), e.Member.User.ID)
		body := `{"name":"Slow","key":"SLOW"}`
		sum := sha256.Sum256([]byte(body))
		running := edgeport.IdempotencyRecord{APIKeyID: keys[0].ID, Key: "slow", Method: "POST", Path: "/v1/projects",
			BodyHash: hex.EncodeToString(sum[:]), CreatedAt: domain.Timestamp(e.Clock.Now())}
		if held, err := db.Idempotency().BeginIdempotent(context.Background(), running, e.Clock.Now().Add(-24*time.Hour), e.Clock.Now().Add(-2*time.Minute)); err != nil || held != nil {
			t.Fatalf("claim: %v %v", held, err)
		}
		idem(e, e.Member.Key, "slow", "/v1/projects", body).ExpectError(t, 409, "idempotency_key_in_use", "")
		// A request left running by a process that died frees its key after
		// the running lease.
		e.Clock.Advance(3 * time.Minute)
		idem(e, e.Member.Key, "slow", "/v1/projects", body).ExpectStatus(t, 201)
	})
}

// A replay is answered only while the key's user has at least the role it
// had when the request first ran: an admin lowered to guest does not get a
// webhook's secret again by replaying its creation, nor a member lowered to
// guest a project it may no longer create; raised again, they do.
func TestIdempotentReplayNeedsTheRoleOfTheFirstRequest(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		ctx := context.Background()
		hook := `{"url":"https://93.184.215.14/h","events":["task.created"]}`
		first := idem(e, e.Admin.Key, "w-1", "/v1/webhooks", hook)
		first.ExpectStatus(t, 201)
		secret := first.Str("secret")
		idem(e, e.Member.Key, "p-1", "/v1/projects", `{"name":"P","key":"PP"}`).ExpectStatus(t, 201)
		for _, u := range []string{e.Admin.User.ID, e.Member.User.ID} {
			if _, err := e.App.Admin.SetRole(ctx, u, domain.RoleGuest); err != nil {
				t.Fatal(err)
			}
		}
		res := idem(e, e.Admin.Key, "w-1", "/v1/webhooks", hook)
		res.ExpectError(t, 403, "permission_denied", "")
		if secret == "" || strings.Contains(string(res.Body), secret) || res.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("the lowered user got the replay: %s", res.Body)
		}
		idem(e, e.Member.Key, "p-1", "/v1/projects", `{"name":"P","key":"PP"}`).ExpectError(t, 403, "permission_denied", "")
		if _, err := e.App.Admin.SetRole(ctx, e.Admin.User.ID, domain.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		again := idem(e, e.Admin.Key, "w-1", "/v1/webhooks", hook)
		again.ExpectStatus(t, 201)
		if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
			t.Fatalf("raised again, the replay: %v %s", again.Header, again.Body)
		}
	})
}
