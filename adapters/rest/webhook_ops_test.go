package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// opsPolicy retries every 20-160ms for longer than the disable span, so
// that a dead receiver keeps failing attempts after the clock jumps (by
// up to 145h in TestOneSuccessResetsTheFailureSpan).
var opsPolicy = domain.RetryPolicy{Base: 20 * time.Millisecond, Max: 160 * time.Millisecond, Window: 1000 * time.Hour}

// eventsOfType lists the event log's events of one type, as the admin.
func eventsOfType(t *testing.T, e *apitest.Env, typ string) []map[string]any {
	t.Helper()
	res := e.Get("/v1/events?limit=100&type="+typ, e.Admin.Key)
	res.ExpectStatus(t, http.StatusOK)
	var out []map[string]any
	for _, it := range res.JSON["data"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// waitWebhook polls the webhook in the store (the API's rate limit would
// refuse polling) until done says so, and returns it as the API shows it.
func waitWebhook(t *testing.T, e *apitest.Env, id string, done func(domain.Webhook) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w, err := e.DB.Webhooks().FindWebhookByID(context.Background(), e.Workspace.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if done(w) {
			res := e.Get("/v1/webhooks/"+id, e.Admin.Key)
			res.ExpectStatus(t, http.StatusOK)
			return res.JSON
		}
		if time.Now().After(deadline) {
			// A fresh key: the test's own may have spent its rate limit.
			fresh := e.KeyFor(e.Admin.User, []string{"*"}, nil)
			t.Fatalf("the webhook never reached the expected state: %+v\ndeliveries: %s", w,
				e.Get("/v1/webhooks/"+id+"/deliveries?limit=100", fresh).Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func inactive(w domain.Webhook) bool { return !w.Active }

// A receiver whose every attempt fails for the disable span, with 10
// attempts at least, is disabled once: its pending deliveries fail, and a
// webhook.disabled event goes to the log and to the workspace's other
// webhooks (verified with standardwebhooks), never to the disabled one. It
// can be pinged while disabled; enabled again, it is delivered to again.
func TestFailingWebhookIsDisabledOnce(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: opsPolicy})
		var healthy atomic.Bool
		dead := newReceiver(t, func(_ int, r *http.Request, _ http.ResponseWriter) int {
			if healthy.Load() {
				return http.StatusOK
			}
			return http.StatusServiceUnavailable
		})
		watcher := newReceiver(t, nil)
		failing := newWebhook(t, e, dead.URL(), "project.created", "webhook.disabled")
		other := newWebhook(t, e, watcher.URL(), "webhook.disabled")
		id := failing.Str("id")
		// A gateway credential: sent with every attempt, never in an event.
		const credential = "Bearer gw-credential-7f3a"
		e.Send(http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, map[string]any{"headers": map[string]string{"Authorization": credential}}).
			ExpectStatus(t, http.StatusOK)
		newProject(t, e, "DIE")
		newProject(t, e, "DEAD")
		dead.WaitFor(12)
		if w := e.Get("/v1/webhooks/"+id, e.Admin.Key); w.JSON["active"] != true {
			t.Fatalf("disabled before the span: %s", w.Body)
		}

		e.Clock.Advance(domain.DefaultDisableAfter)
		w := waitWebhook(t, e, id, inactive)
		if w["disabled_reason"] != "failing" || w["disabled_at"] == nil {
			t.Fatalf("disabled: %v", w)
		}
		ds := waitDeliveries(t, e, id, allStatus(2, "failed"))
		if !strings.Contains(fmt.Sprint(ds[0]["last_error"]), "disabled") && !strings.Contains(fmt.Sprint(ds[1]["last_error"]), "disabled") {
			t.Fatalf("pending deliveries must fail with the reason: %v", ds)
		}
		got := watcher.WaitFor(1)
		wh, err := standardwebhooks.NewWebhook(other.Str("secret"))
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(got[0].Body, got[0].Header); err != nil {
			t.Fatalf("the webhook.disabled delivery does not verify: %v", err)
		}
		var ev map[string]any
		if err := json.Unmarshal(got[0].Body, &ev); err != nil {
			t.Fatal(err)
		}
		data, _ := ev["data"].(map[string]any)
		if ev["type"] != "webhook.disabled" || data["id"] != id || data["disabled_reason"] != "failing" || data["secret"] != nil ||
			strings.Contains(string(got[0].Body), failing.Str("secret")) {
			t.Fatalf("webhook.disabled payload: %s", got[0].Body)
		}
		// The header's name, not its value, in the delivery and the log.
		if h, _ := data["headers"].(map[string]any); h["Authorization"] != domain.RedactedHeaderValue || strings.Contains(string(got[0].Body), credential) {
			t.Fatalf("webhook.disabled shows the header's value: %s", got[0].Body)
		}
		if log := e.Get("/v1/events?type=webhook.disabled", e.Admin.Key); strings.Contains(string(log.Body), credential) ||
			!strings.Contains(string(log.Body), `"Authorization":"`+domain.RedactedHeaderValue+`"`) {
			t.Fatalf("the event log shows the header's value: %s", log.Body)
		}
		time.Sleep(300 * time.Millisecond) // time for a second disable, were there one
		if evs := eventsOfType(t, e, "webhook.disabled"); len(evs) != 1 {
			t.Fatalf("want one webhook.disabled event in the log, got %d", len(evs))
		}
		if n := len(watcher.Requests()); n != 1 {
			t.Fatalf("the other webhook got %d webhook.disabled deliveries, want 1", n)
		}
		for _, r := range dead.Requests() {
			if r.Header.Get("X-service-Event-Type") == "webhook.disabled" {
				t.Fatal("webhook.disabled was delivered to the webhook it is about")
			}
		}

		// A ping reaches it while disabled.
		healthy.Store(true)
		before := len(dead.Requests())
		ping := e.Send(http.MethodPost, "/v1/webhooks/"+id+"/ping", e.Admin.Key, nil)
		ping.ExpectStatus(t, http.StatusAccepted)
		if ping.Str("event_type") != "webhook.ping" || ping.Str("status") != "pending" {
			t.Fatalf("ping: %s", ping.Body)
		}
		pinged := dead.WaitFor(before + 1)[before]
		fh, _ := standardwebhooks.NewWebhook(failing.Str("secret"))
		if err := fh.Verify(pinged.Body, pinged.Header); err != nil || pinged.Header.Get("X-service-Event-Type") != "webhook.ping" {
			t.Fatalf("the ping: %v %s", err, pinged.Body)
		}
		// The ping is sent with the header, and its data shows the name only.
		if pinged.Header.Get("Authorization") != credential || strings.Contains(string(pinged.Body), credential) ||
			!strings.Contains(string(pinged.Body), `"Authorization":"`+domain.RedactedHeaderValue+`"`) {
			t.Fatalf("the ping's header %q and body %s", pinged.Header.Get("Authorization"), pinged.Body)
		}
		if evs := eventsOfType(t, e, "webhook.disabled"); len(evs) != 1 {
			t.Fatal("a ping is not in the event log")
		}
		e.Get("/v1/events/"+pinged.EventID(), e.Admin.Key).ExpectError(t, http.StatusNotFound, string(domain.CodeNotFound), "")

		// Enabled again, it is delivered to again.
		enabled := e.Send(http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, map[string]any{"active": true})
		enabled.ExpectStatus(t, http.StatusOK)
		if enabled.JSON["disabled_reason"] != nil || enabled.JSON["disabled_at"] != nil {
			t.Fatalf("enabled: %s", enabled.Body)
		}
		newProject(t, e, "BACK")
		waitDeliveries(t, e, id, func(ds []map[string]any) bool { return len(ds) == 4 && ds[3]["status"] == "succeeded" })
	})
}

// One success inside the span starts it over: the webhook stays enabled
// however long it failed before the success; failures after it count from
// then.
func TestOneSuccessResetsTheFailureSpan(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: opsPolicy})
		var succeed atomic.Value // the event whose deliveries are answered 200
		succeed.Store("")
		rc := newReceiver(t, func(_ int, r *http.Request, _ http.ResponseWriter) int {
			if id := succeed.Load().(string); id != "" && r.Header.Get(webhook.HeaderEventID) == id {
				return http.StatusOK
			}
			return http.StatusInternalServerError
		})
		id := newWebhook(t, e, rc.URL(), "project.created").Str("id")
		newProject(t, e, "ONE")
		newProject(t, e, "TWO")
		first := rc.WaitFor(12)[0].EventID()
		e.Clock.Advance(domain.DefaultDisableAfter - time.Minute)
		mark := e.Clock.Now()
		// One event's delivery succeeds (answered 200 until the success is
		// recorded: the clock's jump let an attempt in flight lose its
		// lease, and such an attempt is not recorded); the other's keeps
		// failing. The success must be recorded before the clock passes
		// the span.
		succeed.Store(first)
		waitWebhook(t, e, id, func(w domain.Webhook) bool {
			return w.FailingSince == nil || !w.FailingSince.Before(mark)
		})
		got := len(rc.Requests())
		e.Clock.Advance(2 * time.Minute) // the first failure is 72h old; the success is not
		rc.WaitFor(got + 15)
		if w, _ := e.DB.Webhooks().FindWebhookByID(context.Background(), e.Workspace.ID, id); !w.Active {
			t.Fatalf("disabled although an attempt succeeded within the span: %+v", w)
		}
		e.Clock.Advance(domain.DefaultDisableAfter)
		w := waitWebhook(t, e, id, inactive)
		if w["disabled_reason"] != "failing" {
			t.Fatalf("disabled: %v", w)
		}
	})
}

// A 410 disables the webhook as gone, with the event; a user's PATCH as
// user, without one.
func TestDisabledReasons(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: opsPolicy})
		gone := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int { return http.StatusGone })
		id := newWebhook(t, e, gone.URL(), "project.created").Str("id")
		newProject(t, e, "GONE")
		w := waitWebhook(t, e, id, inactive)
		if w["disabled_reason"] != "gone" || w["disabled_at"] == nil {
			t.Fatalf("after a 410: %v", w)
		}
		byUser := newWebhook(t, e, newReceiver(t, nil).URL(), "task.created").Str("id")
		off := e.Send(http.MethodPatch, "/v1/webhooks/"+byUser, e.Admin.Key, map[string]any{"active": false})
		if off.JSON["disabled_reason"] != "user" || off.JSON["disabled_at"] == nil {
			t.Fatalf("turned off: %s", off.Body)
		}
		evs := eventsOfType(t, e, "webhook.disabled")
		if len(evs) != 1 || evs[0]["data"].(map[string]any)["id"] != id {
			t.Fatalf("want one webhook.disabled event, for the 410: %v", evs)
		}
		// Guests and keys without webhooks:read see no webhook event.
		for _, key := range []string{e.Guest.Key, e.KeyFor(e.Admin.User, []string{"events:read"}, nil)} {
			res := e.Get("/v1/events?limit=100", key)
			if strings.Contains(string(res.Body), "webhook.disabled") {
				t.Fatalf("a key that may not read webhooks saw webhook.disabled: %s", res.Body)
			}
			e.Get("/v1/events/"+evs[0]["id"].(string), key).ExpectError(t, http.StatusNotFound, string(domain.CodeNotFound), "")
		}
		// The other workspace sees nothing of it.
		if res := e.Get("/v1/events?limit=100", e.Other.Key); strings.Contains(string(res.Body), id) {
			t.Fatal("another workspace saw the event")
		}
		e.Send(http.MethodPost, "/v1/webhooks/"+id+"/ping", e.Other.Key, nil).ExpectError(t, http.StatusNotFound, string(domain.CodeNotFound), "")
		e.Send(http.MethodPost, "/v1/webhooks/"+id+"/ping", e.Member.Key, nil).ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
	})
}

// Custom headers arrive with every delivery; the service's own, hop-by-hop
// ones and bad names or values are refused with param headers.
func TestWebhookCustomHeaders(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: opsPolicy})
		rc := newReceiver(t, nil)
		res := e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{
			"url": rc.URL(), "events": []string{"project.created"},
			"headers": map[string]string{"Authorization": "Bearer gateway-token", "x-tenant": "acme"},
		})
		res.ExpectStatus(t, http.StatusCreated)
		h, _ := res.JSON["headers"].(map[string]any)
		if h["Authorization"] != "Bearer gateway-token" || h["x-tenant"] != "acme" || len(h) != 2 {
			t.Fatalf("headers: %s", res.Body)
		}
		newProject(t, e, "HDR")
		got := rc.WaitFor(1)[0]
		if got.Header.Get("Authorization") != "Bearer gateway-token" || got.Header.Get("X-Tenant") != "acme" ||
			got.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("received headers: %v", got.Header)
		}
		id := res.Str("id")
		cleared := e.Send(http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, map[string]any{"headers": map[string]string{}})
		if h, _ := cleared.JSON["headers"].(map[string]any); len(h) != 0 {
			t.Fatalf("cleared: %s", cleared.Body)
		}
		tooMany := map[string]string{}
		for i := range 11 {
			tooMany[fmt.Sprintf("X-H%d", i)] = "v"
		}
		for _, bad := range []any{
			map[string]string{"Content-Type": "text/plain"},
			map[string]string{"user-agent": "me"},
			map[string]string{"Host": "evil.test"},
			map[string]string{"webhook-signature": "v1,forged"},
			map[string]string{"X-Service-Signature": "forged"},
			map[string]string{"Transfer-Encoding": "chunked"},
			map[string]string{"Connection": "close"},
			map[string]string{"Bad Name": "v"},
			map[string]string{"X-A": "line\nbreak"},
			map[string]string{"X-A": strings.Repeat("v", 1001)},
			map[string]string{strings.Repeat("h", 101): "v"},
			map[string]string{"X-A": "1", "x-a": "2"},
			tooMany,
			map[string]int{"X-A": 1},
			nil,
		} {
			e.Send(http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, map[string]any{"headers": bad}).
				ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "headers")
		}
		if w := e.Get("/v1/webhooks/"+id, e.Admin.Key); len(w.JSON["headers"].(map[string]any)) != 0 {
			t.Fatalf("a refused patch changed the headers: %s", w.Body)
		}
	})
}

// A header's value is a string: a null one is refused with param headers,
// the message naming the header, on creation and on a patch alike, and
// nothing is stored (the webhook is not created, or keeps what it had).
// An empty string is a value and is kept.
func TestWebhookNullHeaderValue(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		refused := func(t *testing.T, res *apitest.Response, name string) {
			t.Helper()
			res.ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "headers")
			if msg := res.ErrorField("message"); !strings.Contains(msg, "the value of "+name+" is null") {
				t.Fatalf("message %q does not name %s", msg, name)
			}
		}
		webhooks := func() int {
			t.Helper()
			return len(e.Get("/v1/webhooks?limit=100", e.Admin.Key).JSON["data"].([]any))
		}
		// A raw body: the JSON null must reach the server as it is.
		for _, body := range []string{
			`{"url": "http://127.0.0.1:9/hook", "events": ["project.created"], "headers": {"X-Foo": null}}`,
			`{"url": "http://127.0.0.1:9/hook", "events": ["project.created"], "headers": {"A-First": "v", "X-Foo": null}}`,
		} {
			refused(t, e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, body), "X-Foo")
		}
		if n := webhooks(); n != 0 {
			t.Fatalf("a refused creation stored %d webhooks", n)
		}

		res := e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key,
			`{"url": "http://127.0.0.1:9/hook", "events": ["project.created"], "headers": {"X-Keep": "v", "X-Empty": ""}}`)
		res.ExpectStatus(t, http.StatusCreated)
		id := res.Str("id")
		const kept = `{"X-Empty":"","X-Keep":"v"}`
		if got, _ := json.Marshal(res.JSON["headers"]); string(got) != kept {
			t.Fatalf("headers %s, want %s", got, kept)
		}
		for _, body := range []string{
			`{"headers": {"X-Foo": null}}`,
			`{"url": "http://127.0.0.1:9/other", "headers": {"X-Keep": "w", "X-Foo": null}}`,
		} {
			refused(t, e.Send(http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, body), "X-Foo")
		}
		w := e.Get("/v1/webhooks/"+id, e.Admin.Key)
		if got, _ := json.Marshal(w.JSON["headers"]); string(got) != kept || w.Str("url") != "http://127.0.0.1:9/hook" {
			t.Fatalf("a refused patch changed the webhook: %s", w.Body)
		}
		if n := webhooks(); n != 1 {
			t.Fatalf("%d webhooks, want 1", n)
		}
	})
}
