package graph_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// failingReceiver answers every request 503 and keeps their headers.
type failingReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []http.Header
}

func newFailingReceiver(t *testing.T) *failingReceiver {
	rc := &failingReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.got = append(rc.got, r.Header.Clone())
		rc.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// waitFor waits until n requests arrived and returns their headers.
func (rc *failingReceiver) waitFor(t *testing.T, n int) []http.Header {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rc.mu.Lock()
		got := append([]http.Header(nil), rc.got...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d requests, want %d", len(got), n)
		}
	}
}

const opsWebhookFields = `id active disabledReason disabledAt headers { name value }`

// Over GraphQL: custom headers are set, validated and sent; a webhook
// failing past the span is disabled with a WEBHOOK_DISABLED event that an
// admin's subscription receives (with the webhook) and a guest's and
// another workspace's do not; pingWebhook reaches it while disabled;
// updateWebhook enables it again (and disables it as USER).
func TestWebhookOperationsOverGraphQL(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: domain.RetryPolicy{Base: 20 * time.Millisecond, Max: 160 * time.Millisecond, Window: 1000 * time.Hour}})
		rc := newFailingReceiver(t)

		const create = `mutation($in: CreateWebhookInput!) { createWebhook(input: $in) { webhook { ` + opsWebhookFields + ` } } }`
		for _, bad := range []string{"Content-Type", "webhook-id", "X-Service-Event-Type", "Connection", "bad name"} {
			in := map[string]any{"url": rc.srv.URL, "events": []string{"PROJECT_CREATED"},
				"headers": []map[string]any{{"name": bad, "value": "x"}}}
			gql(t, e.Env, e.Admin.Key, create, map[string]any{"in": in}).expectError(t, "validation_failed", "headers")
		}
		in := map[string]any{"url": rc.srv.URL, "events": []string{"PROJECT_CREATED"},
			"headers": []map[string]any{{"name": "Authorization", "value": "Bearer gateway-token"}}}
		w := get(gql(t, e.Env, e.Admin.Key, create, map[string]any{"in": in}).ok(t), "createWebhook", "webhook")
		id := mustStr(t, w, "id")
		if jsonString(get(w, "headers")) != `[{"name":"Authorization","value":"Bearer gateway-token"}]` ||
			get(w, "disabledReason") != nil || get(w, "disabledAt") != nil {
			t.Fatalf("created: %s", jsonString(w))
		}

		const disabledSub = `subscription { events(types: [WEBHOOK_DISABLED]) { id type projectId task { id } project { id }
			webhook { ` + opsWebhookFields + ` } } }`
		admin := dialWS(t, e.URL, nil, bearer(e.Admin.Key))
		admin.ack()
		admin.subscribe("disabled", disabledSub, nil)
		guest := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		guest.ack()
		guest.subscribe("all", `subscription { events { id type } }`, nil)
		other := dialWS(t, e.URL, nil, bearer(e.Other.Key))
		other.ack()
		other.subscribe("all", `subscription { events { id type } }`, nil)
		waitForSubscriptions(t, e, 3)

		createProject(t, e.Env, "ONE")
		createProject(t, e.Env, "TWO")
		for _, h := range rc.waitFor(t, 12) {
			if h.Get("Authorization") != "Bearer gateway-token" {
				t.Fatalf("a delivery came without its custom header: %v", h)
			}
		}
		// The guest sees the two projects' events, then nothing of the webhook.
		for range 2 {
			if ev := guest.event("all", 10*time.Second); ev["type"] != "PROJECT_CREATED" {
				t.Fatalf("guest got %v", ev)
			}
		}

		e.Clock.Advance(domain.DefaultDisableAfter)
		ev := admin.event("disabled", 10*time.Second)
		hook := get(ev, "webhook")
		if ev["type"] != "WEBHOOK_DISABLED" || ev["projectId"] != nil || ev["task"] != nil || ev["project"] != nil ||
			str(hook, "id") != id || get(hook, "active") != false || str(hook, "disabledReason") != "FAILING" || get(hook, "disabledAt") == nil {
			t.Fatalf("WEBHOOK_DISABLED: %s", jsonString(ev))
		}
		guest.quiet(300 * time.Millisecond)
		other.quiet(300 * time.Millisecond)

		// A ping reaches it while disabled, alone; its id is the delivery's.
		before := len(rc.waitFor(t, 0))
		for _, key := range []string{e.Member.Key, e.Guest.Key} {
			gql(t, e.Env, key, `mutation($id: ID!) { pingWebhook(id: $id) }`, map[string]any{"id": id}).expectError(t, "permission_denied", "")
		}
		gql(t, e.Env, e.Other.Key, `mutation($id: ID!) { pingWebhook(id: $id) }`, map[string]any{"id": id}).expectError(t, "resource_not_found", "")
		ping := gql(t, e.Env, e.Admin.Key, `mutation($id: ID!) { pingWebhook(id: $id) }`, map[string]any{"id": id}).ok(t)
		if !strings.HasPrefix(str(ping, "pingWebhook"), domain.PrefixDelivery+"_") {
			t.Fatalf("ping: %v", ping)
		}
		if h := rc.waitFor(t, before+1)[before]; h.Get("X-Service-Event-Type") != "webhook.ping" || h.Get("Authorization") != "Bearer gateway-token" {
			t.Fatalf("ping headers: %v", h)
		}

		const update = `mutation($id: ID!, $in: UpdateWebhookInput!) { updateWebhook(id: $id, input: $in) { ` + opsWebhookFields + ` } }`
		on := get(gql(t, e.Env, e.Admin.Key, update, map[string]any{"id": id, "in": map[string]any{"active": true, "headers": []any{}}}).ok(t), "updateWebhook")
		if get(on, "active") != true || get(on, "disabledReason") != nil || get(on, "disabledAt") != nil || jsonString(get(on, "headers")) != `[]` {
			t.Fatalf("enabled: %s", jsonString(on))
		}
		off := get(gql(t, e.Env, e.Admin.Key, update, map[string]any{"id": id, "in": map[string]any{"active": false}}).ok(t), "updateWebhook")
		if str(off, "disabledReason") != "USER" || get(off, "disabledAt") == nil {
			t.Fatalf("disabled by the user: %s", jsonString(off))
		}
		admin.quiet(300 * time.Millisecond) // a user's PATCH emits no event
	})
}

// A subscription resuming from an event older than the live window reads
// the log from the database; that read keeps to what the key may see as
// the live path does: no webhook.disabled for a guest, nothing of another
// project for a project-restricted key.
func TestCatchUpKeepsToWhatTheKeySees(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{AllowPrivateWebhooks: true, Live: app.LiveOptions{Window: 2}})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: domain.RetryPolicy{Base: 20 * time.Millisecond, Max: 160 * time.Millisecond, Window: 1000 * time.Hour}})
		gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }))
		t.Cleanup(gone.Close)
		hook, _ := createWebhook(t, e.Env, gone.URL, "PROJECT_CREATED")

		one := createProject(t, e.Env, "ONE") // its delivery answers 410: webhook.disabled follows
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			w, err := e.DB.Webhooks().FindWebhookByID(context.Background(), e.Workspace.ID, hook)
			if err != nil {
				t.Fatal(err)
			}
			if !w.Active {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the webhook was never disabled")
			}
		}
		two := createProject(t, e.Env, "TWO")
		createTask(t, e.Env, one, map[string]any{"title": "in one"})
		inTwo := createTask(t, e.Env, two, map[string]any{"title": "in two"})
		createProject(t, e.Env, "THREE")
		createProject(t, e.Env, "FOUR") // the window (2) now holds neither ONE's nor TWO's events

		log := get(gql(t, e.Env, e.Admin.Key, `{ events(first: 100) { nodes { id type projectId } } }`, nil).ok(t), "events", "nodes").([]any)
		if len(log) != 7 || get(log[1], "type") != "WEBHOOK_DISABLED" {
			t.Fatalf("the log: %s", jsonString(log))
		}
		first := str(log[0], "id") // ONE's project.created

		const sub = `subscription($after: ID) { events(after: $after) { id type projectId } }`
		guest := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		guest.ack()
		guest.subscribe("g", sub, map[string]any{"after": first})
		for _, want := range []string{"PROJECT_CREATED", "TASK_CREATED", "TASK_CREATED", "PROJECT_CREATED", "PROJECT_CREATED"} {
			if ev := guest.event("g", 10*time.Second); ev["type"] != want {
				t.Fatalf("the guest got %v, want %s (the webhook event is not the guest's to see)", ev, want)
			}
		}
		guest.quiet(300 * time.Millisecond)

		restricted := e.KeyFor(e.Member.User, []string{"*"}, []string{two})
		r := dialWS(t, e.URL, nil, bearer(restricted))
		r.ack()
		r.subscribe("r", sub, map[string]any{"after": str(log[2], "id")}) // TWO's project.created
		if ev := r.event("r", 10*time.Second); ev["type"] != "TASK_CREATED" || ev["projectId"] != two {
			t.Fatalf("the restricted key got %v, want the task %s of its project", ev, inTwo)
		}
		r.quiet(300 * time.Millisecond)
	})
}
