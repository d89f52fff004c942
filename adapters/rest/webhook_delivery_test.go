package rest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
)

var allEvents = []string{"task.created", "task.updated", "task.deleted", "project.created", "project.updated"}

// payload is a delivered event, decoded.
type payload struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	Type               string          `json:"type"`
	CreatedAt          string          `json:"created_at"`
	Data               json.RawMessage `json:"data"`
	PreviousAttributes json.RawMessage `json:"previous_attributes"`
}

func decodePayload(t *testing.T, body []byte) payload {
	t.Helper()
	var p payload
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("payload %s: %v", body, err)
	}
	return p
}

// verify checks a request's signature the way docs/webhooks.md tells
// receivers to.
func verify(r received, secret string) bool {
	return webhook.Sign(secret, r.Body) == r.Header.Get(webhook.HeaderSignature)
}

func compactJSON(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Each of the five event types reaches a subscribed webhook with the
// documented payload and a signature that verifies with its secret only;
// unsubscribed types, inactive webhooks and no-op updates get nothing.
func TestWebhookEventsReachSubscribers(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(5 * time.Second)})
		all, created, off := newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil)
		wAll := newWebhook(t, e, all.URL(), allEvents...)
		wCreated := newWebhook(t, e, created.URL(), "task.created")
		wOff := newWebhook(t, e, off.URL(), allEvents...)
		e.Send(http.MethodPatch, "/v1/webhooks/"+wOff.Str("id"), e.Admin.Key, map[string]any{"active": false}).ExpectStatus(t, 200)
		newWebhook(t, otherWorkspaceEnv(e), all.URL(), allEvents...) // another workspace's: sees none of these

		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Apollo", "key": "APO"})
		prj.ExpectStatus(t, 201)
		prjID := prj.Str("id")
		prjUpd := e.Send(http.MethodPatch, "/v1/projects/"+prjID, e.Member.Key, map[string]any{"name": "Apollo 11"})
		tsk := newTask(t, e, prjID, map[string]any{"title": "Launch", "assignee_id": e.Guest.User.ID})
		tskID := tsk.Str("id")
		// A no-op update (same values) emits nothing.
		e.Send(http.MethodPatch, "/v1/tasks/"+tskID, e.Member.Key, map[string]any{"title": "Launch", "assignee_id": e.Guest.User.ID}).ExpectStatus(t, 200)
		e.Send(http.MethodPatch, "/v1/projects/"+prjID, e.Member.Key, map[string]any{"name": "Apollo 11"}).ExpectStatus(t, 200)
		tskUpd := e.Send(http.MethodPatch, "/v1/tasks/"+tskID, e.Member.Key, map[string]any{"title": "Land", "due_at": "2026-07-20T20:17:40Z", "status": "open"})
		tskUpd.ExpectStatus(t, 200)
		beforeDelete := e.Get("/v1/tasks/"+tskID, e.Guest.Key)
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + tskID, Key: e.Member.Key}).ExpectStatus(t, 204)

		got := all.WaitFor(5)
		ds := waitDeliveries(t, e, wAll.Str("id"), allStatus(5, "succeeded"))
		want := []struct {
			typ      string
			data     []byte
			previous string
		}{
			{"project.created", prj.Body, ""},
			{"project.updated", prjUpd.Body, `{"name":"Apollo"}`},
			{"task.created", tsk.Body, ""},
			{"task.updated", tskUpd.Body, `{"due_at":null,"title":"Launch"}`},
			{"task.deleted", beforeDelete.Body, ""},
		}
		byType := map[string]received{}
		for _, r := range got {
			p := decodePayload(t, r.Body)
			if _, dup := byType[p.Type]; dup {
				t.Fatalf("%s delivered twice: %s", p.Type, r.Body)
			}
			byType[p.Type] = r
		}
		evtOf := map[string]string{}
		for _, d := range ds {
			evtOf[d["event_type"].(string)] = d["event_id"].(string)
			if d["attempts"] != 1.0 || d["last_status_code"] != 200.0 || d["next_attempt_at"] != nil || d["last_error"] != nil {
				t.Fatalf("delivery: %v", d)
			}
		}
		for _, w := range want {
			r, ok := byType[w.typ]
			if !ok {
				t.Fatalf("%s never arrived", w.typ)
			}
			p := decodePayload(t, r.Body)
			if !strings.HasPrefix(p.ID, "evt_") || p.Object != "event" || r.EventID() != p.ID || r.Header.Get(webhook.HeaderEventType) != w.typ ||
				r.Attempt() != "1" || evtOf[w.typ] != p.ID || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("User-Agent") != "Worktrack-Webhooks/1" {
				t.Fatalf("%s: headers %v, payload %s", w.typ, r.Header, r.Body)
			}
			if _, err := time.Parse(time.RFC3339Nano, p.CreatedAt); err != nil || !strings.HasSuffix(p.CreatedAt, "Z") {
				t.Fatalf("%s: created_at %q", w.typ, p.CreatedAt)
			}
			// data is the resource exactly as REST shows it (before the
			// deletion, for task.deleted).
			if compactJSON(t, p.Data) != compactJSON(t, w.data) {
				t.Fatalf("%s: data\n%s\nwant\n%s", w.typ, p.Data, w.data)
			}
			if (p.PreviousAttributes == nil) != (w.previous == "") || (w.previous != "" && compactJSON(t, p.PreviousAttributes) != w.previous) {
				t.Fatalf("%s: previous_attributes %s, want %s", w.typ, p.PreviousAttributes, w.previous)
			}
			if !verify(r, wAll.Str("secret")) || verify(r, wCreated.Str("secret")) || verify(r, wAll.Str("secret")+"x") {
				t.Fatalf("%s: the signature must verify with the webhook's secret and no other", w.typ)
			}
		}

		// The task.created-only webhook got exactly its one event; the
		// inactive webhook was owed nothing.
		cr := created.WaitFor(1)
		waitDeliveries(t, e, wCreated.Str("id"), allStatus(1, "succeeded"))
		if p := decodePayload(t, cr[0].Body); p.Type != "task.created" || !verify(cr[0], wCreated.Str("secret")) || cr[0].EventID() != byType["task.created"].EventID() {
			t.Fatalf("task.created-only webhook: %s", cr[0].Body)
		}
		if n := len(deliveries(t, e, wOff.Str("id"), "")); n != 0 {
			t.Fatalf("the inactive webhook was owed %d deliveries", n)
		}
		// Everything owed has been delivered; nothing else arrives.
		if n := len(all.Requests()) + len(created.Requests()) + len(off.Requests()); n != 6 {
			t.Fatalf("%d requests in all, want 6", n)
		}
	})
}

// otherWorkspaceEnv is a view of e whose admin is the other workspace's.
func otherWorkspaceEnv(e *apitest.Env) *apitest.Env {
	o := *e
	o.Admin = e.Other
	return &o
}

// A receiver failing twice, then succeeding, sees attempts 1, 2, 3 with the
// same body bytes and event id, spaced by the backoff.
func TestWebhookRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(5 * time.Second)})
		rc := newReceiver(t, func(n int, _ *http.Request, _ http.ResponseWriter) int {
			if n <= 2 {
				return http.StatusInternalServerError
			}
			return http.StatusNoContent
		})
		w := newWebhook(t, e, rc.URL(), "project.created")
		newProject(t, e, "RTY")
		got := rc.WaitFor(3)
		ds := waitDeliveries(t, e, w.Str("id"), allStatus(1, "succeeded"))
		for i, r := range got {
			if r.Attempt() != []string{"1", "2", "3"}[i] || !bytes.Equal(r.Body, got[0].Body) || r.EventID() != got[0].EventID() ||
				r.Header.Get(webhook.HeaderSignature) != got[0].Header.Get(webhook.HeaderSignature) {
				t.Fatalf("request %d: attempt %s, event %s, body %s", i, r.Attempt(), r.EventID(), r.Body)
			}
		}
		// Backoff: 20ms before the second attempt, 40ms before the third.
		if gap := got[1].At.Sub(got[0].At); gap < 20*time.Millisecond {
			t.Fatalf("second attempt after %v, before the 20ms backoff", gap)
		}
		if gap := got[2].At.Sub(got[1].At); gap < 40*time.Millisecond {
			t.Fatalf("third attempt after %v, before the 40ms backoff", gap)
		}
		if d := ds[0]; d["attempts"] != 3.0 || d["last_status_code"] != 204.0 || d["event_id"] != got[0].EventID() || d["last_attempt_at"] == nil {
			t.Fatalf("delivery: %v", d)
		}
		if n := len(rc.Requests()); n != 3 {
			t.Fatalf("%d requests after success", n)
		}
	})
}

// Timeouts, redirects, 4xx and 5xx are failures, and retried.
func TestWebhookFailuresAreRetried(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(10 * time.Second), Timeout: 300 * time.Millisecond})
		redirectTarget := newReceiver(t, nil)
		kinds := map[string]func(http.ResponseWriter, *http.Request) int{
			"timeout": func(_ http.ResponseWriter, r *http.Request) int {
				select {
				case <-r.Context().Done():
				case <-time.After(2 * time.Second):
				}
				return 200 // too late
			},
			"redirect": func(w http.ResponseWriter, _ *http.Request) int {
				w.Header().Set("Location", redirectTarget.URL())
				return http.StatusTemporaryRedirect
			},
			"4xx": func(http.ResponseWriter, *http.Request) int { return http.StatusBadRequest },
			"5xx": func(http.ResponseWriter, *http.Request) int { return http.StatusBadGateway },
		}
		type hook struct {
			rc *receiver
			id string
		}
		hooks := map[string]hook{}
		for name, fail := range kinds {
			rc := newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) int {
				if n == 1 {
					return fail(w, r)
				}
				return http.StatusOK
			})
			hooks[name] = hook{rc, newWebhook(t, e, rc.URL(), "project.created").Str("id")}
		}
		newProject(t, e, "FLR")
		for name, h := range hooks {
			got := h.rc.WaitFor(2)
			if got[0].Attempt() != "1" || got[1].Attempt() != "2" || !bytes.Equal(got[0].Body, got[1].Body) {
				t.Fatalf("%s: attempts %s, %s", name, got[0].Attempt(), got[1].Attempt())
			}
			d := waitDeliveries(t, e, h.id, allStatus(1, "succeeded"))[0]
			if d["attempts"] != 2.0 {
				t.Fatalf("%s: %v", name, d)
			}
		}
		if n := len(redirectTarget.Requests()); n != 0 {
			t.Fatalf("a redirect was followed (%d requests)", n)
		}
	})
}

// An always-failing receiver's delivery ends failed when the retry window
// closes, and no attempt starts after it.
func TestWebhookFailsWhenTheWindowCloses(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		// Attempts every 20-160 ms: a window of 3 s holds at least three of
		// them even on a machine loaded enough to make each take a second.
		const window = 3 * time.Second
		policy := testPolicy(window)
		e.RunDispatcher(t, app.DispatcherOptions{Policy: policy})
		rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int { return http.StatusServiceUnavailable })
		w := newWebhook(t, e, rc.URL(), "project.created")
		newProject(t, e, "WIN")
		d := waitDeliveries(t, e, w.Str("id"), allStatus(1, "failed"))[0]
		got := rc.Requests()
		if len(got) < 3 || d["attempts"] != float64(len(got)) || d["last_status_code"] != 503.0 || d["next_attempt_at"] != nil {
			t.Fatalf("failed delivery: %v after %d requests", d, len(got))
		}
		// Once failed, the delivery is never attempted again. (The exact
		// boundary, no attempt scheduled past the window, is pinned by the
		// domain's RecordAttempt test without a clock race.)
		time.Sleep(10 * policy.Max) // ten of the longest backoffs: no attempt comes
		if n := len(rc.Requests()); n != len(got) {
			t.Fatalf("%d attempts after the delivery failed", n-len(got))
		}
		for i, r := range got {
			if r.Attempt() != strconv.Itoa(i+1) || !bytes.Equal(r.Body, got[0].Body) {
				t.Fatalf("request %d: attempt %s", i, r.Attempt())
			}
		}
	})
}

// rotate_secret changes the key that signs the next attempt.
func TestWebhookRotateSecretSignsTheNextAttempt(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(5 * time.Second)})
		rotated := make(chan struct{})
		rc := newReceiver(t, func(n int, _ *http.Request, _ http.ResponseWriter) int {
			if n == 1 {
				<-rotated // the first attempt fails, once the secret has changed
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		w := newWebhook(t, e, rc.URL(), "project.created")
		newProject(t, e, "ROT")
		rc.WaitFor(1)
		rot := e.Send(http.MethodPost, "/v1/webhooks/"+w.Str("id")+"/rotate_secret", e.Admin.Key, nil)
		rot.ExpectStatus(t, 200)
		close(rotated)
		got := rc.WaitFor(2)
		if !verify(got[0], w.Str("secret")) || !verify(got[1], rot.Str("secret")) || verify(got[1], w.Str("secret")) || !bytes.Equal(got[0].Body, got[1].Body) {
			t.Fatal("the attempt after rotate_secret must be signed with the new secret, and only with it")
		}
	})
}

// redeliver sends a failed delivery again: same event id and body, the
// attempt number continuing.
func TestWebhookRedeliver(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		// A redelivery opens a new retry window: 3 s, so that a loaded
		// machine's dispatcher attempts it before the window closes (in
		// 300 ms, it once failed unattempted).
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(3 * time.Second)})
		var mu sync.Mutex
		healthy := false
		rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int {
			mu.Lock()
			defer mu.Unlock()
			if healthy {
				return http.StatusOK
			}
			return http.StatusInternalServerError
		})
		w := newWebhook(t, e, rc.URL(), "project.created")
		newProject(t, e, "RED")
		failed := waitDeliveries(t, e, w.Str("id"), allStatus(1, "failed"))[0]
		n := len(rc.Requests())
		mu.Lock()
		healthy = true
		mu.Unlock()

		res := e.Send(http.MethodPost, "/v1/webhooks/"+w.Str("id")+"/deliveries/"+failed["id"].(string)+"/redeliver", e.Admin.Key, nil)
		res.ExpectStatus(t, 200)
		if res.Str("status") != "pending" || res.JSON["attempts"] != failed["attempts"] || res.Str("next_attempt_at") == "" ||
			res.Str("id") != failed["id"] || res.Str("event_id") != failed["event_id"] || res.Str("object") != "webhook_delivery" {
			t.Fatalf("redeliver answered %s (was %v)", res.Body, failed)
		}
		got := rc.WaitFor(n + 1)
		last := got[n]
		if last.EventID() != got[0].EventID() || !bytes.Equal(last.Body, got[0].Body) || last.Attempt() != strconv.Itoa(n+1) {
			t.Fatalf("redelivery: attempt %s event %s, want attempt %d of %s", last.Attempt(), last.EventID(), n+1, got[0].EventID())
		}
		d := waitDeliveries(t, e, w.Str("id"), allStatus(1, "succeeded"))[0]
		if d["attempts"] != float64(n+1) {
			t.Fatalf("after redelivery: %v", d)
		}
		// The status filter sees it among the succeeded, not the failed.
		if len(deliveries(t, e, w.Str("id"), "&status=succeeded")) != 1 || len(deliveries(t, e, w.Str("id"), "&status=failed")) != 0 {
			t.Fatal("status filter")
		}
	})
}

// A 410 fails the delivery, deactivates the webhook and fails its other
// pending deliveries; later changes owe it nothing.
func TestWebhookGoneDeactivates(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		// One attempt per webhook at a time: the second delivery waits
		// while the first is in flight.
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(5 * time.Second), PerWebhook: 1})
		release := make(chan struct{})
		rc := newReceiver(t, func(n int, _ *http.Request, _ http.ResponseWriter) int {
			if n == 1 {
				<-release
			}
			return http.StatusGone
		})
		w := newWebhook(t, e, rc.URL(), "project.created", "project.updated")
		prj := newProject(t, e, "GON")
		rc.WaitFor(1)
		e.Send(http.MethodPatch, "/v1/projects/"+prj, e.Member.Key, map[string]any{"name": "Second"}).ExpectStatus(t, 200)
		close(release)
		ds := waitDeliveries(t, e, w.Str("id"), allStatus(2, "failed"))
		if got := e.Get("/v1/webhooks/"+w.Str("id"), e.Admin.Key); got.JSON["active"] != false {
			t.Fatalf("webhook still active after 410: %s", got.Body)
		}
		if ds[0]["last_status_code"] != 410.0 || ds[0]["attempts"] != 1.0 || ds[1]["attempts"] != 0.0 || !strings.Contains(ds[1]["last_error"].(string), "410") {
			t.Fatalf("deliveries after 410: %v", ds)
		}
		e.Send(http.MethodPatch, "/v1/projects/"+prj, e.Member.Key, map[string]any{"name": "Third"}).ExpectStatus(t, 200)
		if n := len(deliveries(t, e, w.Str("id"), "")); n != 2 {
			t.Fatalf("a deactivated webhook was owed a new delivery (%d)", n)
		}
		if n := len(rc.Requests()); n != 1 {
			t.Fatalf("receiver got %d requests after answering 410", n)
		}
	})
}

// Retry-After on 429/503 is honoured, even beyond the backoff cap; one that
// falls after the window fails the delivery.
func TestWebhookRetryAfter(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(4 * time.Second)})
		rc := newReceiver(t, func(n int, _ *http.Request, w http.ResponseWriter) int {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				return http.StatusTooManyRequests
			}
			return http.StatusOK
		})
		w := newWebhook(t, e, rc.URL(), "project.created")
		far := newReceiver(t, func(_ int, _ *http.Request, w http.ResponseWriter) int {
			w.Header().Set("Retry-After", time.Now().Add(time.Minute).UTC().Format(http.TimeFormat))
			return http.StatusServiceUnavailable
		})
		wFar := newWebhook(t, e, far.URL(), "project.created")
		newProject(t, e, "RTA")

		rc.WaitFor(1)
		pending := waitDeliveries(t, e, w.Str("id"), func(ds []map[string]any) bool {
			return len(ds) == 1 && ds[0]["attempts"] == 1.0
		})[0]
		last, _ := time.Parse(time.RFC3339Nano, pending["last_attempt_at"].(string))
		next, _ := time.Parse(time.RFC3339Nano, pending["next_attempt_at"].(string))
		if next.Sub(last) < time.Second {
			t.Fatalf("next attempt %v after the 429, before its Retry-After of 1s", next.Sub(last))
		}
		got := rc.WaitFor(2)
		if gap := got[1].At.Sub(got[0].At); gap < time.Second {
			t.Fatalf("retried %v after a 429 asking for 1s", gap)
		}
		waitDeliveries(t, e, w.Str("id"), allStatus(1, "succeeded"))

		d := waitDeliveries(t, e, wFar.Str("id"), allStatus(1, "failed"))[0]
		if d["attempts"] != 1.0 || d["last_status_code"] != 503.0 {
			t.Fatalf("a Retry-After beyond the window: %v", d)
		}
	})
}
