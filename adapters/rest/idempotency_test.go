package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/ratelimit"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/cmd/worktrack/wiring"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/server"
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

		// A first request that is still running holds its key: it is held
		// in its transaction, after its key's claim, until released.
		stalled, release := stallProjectInsert(t, db, "SLOW")
		body := `{"name":"Slow","key":"SLOW"}`
		first := make(chan *apitest.Response, 1)
		go func() { first <- idem(e, e.Member.Key, "slow", "/v1/projects", body) }()
		<-stalled
		busy := idem(e, e.Member.Key, "slow", "/v1/projects", body)
		busy.ExpectError(t, 409, "idempotency_key_in_use", "")
		if busy.Header.Get("Retry-After") != "1" {
			t.Fatalf("idempotency_key_in_use without Retry-After: %v", busy.Header)
		}
		close(release)
		done := <-first
		done.ExpectStatus(t, 201)
		again := idem(e, e.Member.Key, "slow", "/v1/projects", body)
		again.ExpectStatus(t, 201)
		if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(done.Body) {
			t.Fatalf("after the first finished: %v %s", again.Header, again.Body)
		}
	})
}

// stallProjectInsert holds the first insert of a project whose key is
// projectKey (inside its transaction) until release is closed; stalled is
// closed when it is held.
func stallProjectInsert(t *testing.T, db *store.DB, projectKey string) (stalled, release chan struct{}) {
	t.Helper()
	stalled, release = make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	err := db.Gorm().Callback().Create().Before("gorm:create").Register("test:stall-"+projectKey, func(tx *gorm.DB) {
		if tx.Statement.Table != "projects" || !strings.Contains(fmt.Sprint(tx.Statement.Dest), projectKey) || !once.CompareAndSwap(false, true) {
			return
		}
		close(stalled)
		<-release
	})
	if err != nil {
		t.Fatal(err)
	}
	return stalled, release
}

// Two server processes on one PostgreSQL: a retry sent to the second while
// the first still runs waits at its key's claim for the first's commit,
// then answers the first's answer as a replay; nothing is written twice.
func TestIdempotentRetryOnAnotherProcess(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	e := apitest.New(t, db)
	second, _ := wiring.HTTP(e.App, db, httpedge.Options{Clock: e.Clock, Limiter: ratelimit.NewMemory()}, server.Options{})
	other := *e
	other.Engine = second.Engine()

	stalled, release := stallProjectInsert(t, db, "TWICE")
	body := `{"name":"Twice","key":"TWICE"}`
	first := make(chan *apitest.Response, 1)
	go func() { first <- idem(e, e.Member.Key, "twice", "/v1/projects", body) }()
	<-stalled
	retried := make(chan *apitest.Response, 1)
	go func() { retried <- idem(&other, e.Member.Key, "twice", "/v1/projects", body) }()
	// The retry is waiting for the first's claim of the key.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := db.Gorm().Raw(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO idempotency_keys%'`).Scan(&waiting).Error; err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the retry never waited for the first request's claim")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	a, b := <-first, <-retried
	a.ExpectStatus(t, 201)
	b.ExpectStatus(t, 201)
	if a.Header.Get("Idempotent-Replayed") != "" || b.Header.Get("Idempotent-Replayed") != "true" || string(a.Body) != string(b.Body) {
		t.Fatalf("first %v %s; retry %v %s", a.Header, a.Body, b.Header, b.Body)
	}
	if list := e.Get("/v1/projects", e.Guest.Key); len(list.JSON["data"].([]any)) != 1 {
		t.Fatalf("written twice: %s", list.Body)
	}
}

// Every POST route keeps its answer with its change: sent again with its
// key it replays, and changes nothing. A route whose use case did not
// commit its answer would run twice here.
func TestEveryPostReplays(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		post := func(path, body string) *apitest.Response {
			res := e.Do(apitest.Request{Method: http.MethodPost, Path: path, Key: e.Admin.Key, Body: body})
			if res.Status/100 != 2 {
				t.Fatalf("POST %s: %d %s", path, res.Status, res.Body)
			}
			return res
		}
		project := post("/v1/projects", `{"name":"Replays","key":"RPL"}`)
		hook := post("/v1/webhooks", `{"url":"https://93.184.215.14/h","events":["task.created"]}`)
		ping := post("/v1/webhooks/"+hook.Str("id")+"/ping", `{}`)
		counts := func() string {
			var n [5]int64
			for i, table := range []string{"projects", "tasks", "webhooks", "webhook_deliveries", "api_keys"} {
				if err := db.Gorm().Table(table).Count(&n[i]).Error; err != nil {
					t.Fatal(err)
				}
			}
			return fmt.Sprint(n)
		}
		for _, r := range []struct{ path, body string }{
			{"/v1/projects", `{"name":"Once","key":"ONC"}`},
			{"/v1/projects/" + project.Str("id") + "/tasks", `{"title":"Once"}`},
			{"/v1/projects/" + project.Str("id") + "/tasks/batch", `{"tasks":[{"title":"One"},{"title":"Two"}]}`},
			{"/v1/webhooks", `{"url":"https://93.184.215.14/once","events":["task.created"]}`},
			{"/v1/webhooks/" + hook.Str("id") + "/rotate_secret", `{}`},
			{"/v1/webhooks/" + hook.Str("id") + "/ping", `{}`},
			{"/v1/webhooks/" + hook.Str("id") + "/deliveries/" + ping.Str("id") + "/redeliver", ``},
			{"/v1/api_keys", `{"name":"Once"}`},
		} {
			first := e.Do(apitest.Request{Method: http.MethodPost, Path: r.path, Key: e.Admin.Key, Body: r.body, Header: map[string]string{"Idempotency-Key": "once:" + r.path}})
			if first.Status/100 != 2 {
				t.Fatalf("POST %s: %d %s", r.path, first.Status, first.Body)
			}
			before := counts()
			again := e.Do(apitest.Request{Method: http.MethodPost, Path: r.path, Key: e.Admin.Key, Body: r.body, Header: map[string]string{"Idempotency-Key": "once:" + r.path}})
			if again.Status != first.Status || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("POST %s again: %d %v %s", r.path, again.Status, again.Header, again.Body)
			}
			if after := counts(); after != before {
				t.Fatalf("POST %s again wrote: %s, then %s", r.path, before, after)
			}
			if r.path == "/v1/api_keys" {
				if again.Str("secret") != "" || first.Str("secret") == "" || again.Str("id") != first.Str("id") {
					t.Fatalf("an API key's replay shows its secret, or another key: %s", again.Body)
				}
				continue
			}
			if string(again.Body) != string(first.Body) {
				t.Fatalf("POST %s replayed another answer:\n%s\n%s", r.path, first.Body, again.Body)
			}
		}
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
