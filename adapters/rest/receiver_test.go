package rest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

// received is one request a test receiver got.
type received struct {
	At     time.Time
	Header http.Header
	Body   []byte
}

// Attempt is the request's X-service-Delivery-Attempt.
func (r received) Attempt() string { return r.Header.Get(webhook.HeaderAttempt) }

// EventID is the request's X-service-Event-Id.
func (r received) EventID() string { return r.Header.Get(webhook.HeaderEventID) }

// receiver is a real HTTP webhook receiver (httptest) that records every
// request and answers with respond (200 when nil). respond sees the
// request's number, from 1, among those this receiver got.
type receiver struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	got     []received
	respond func(n int, r *http.Request, w http.ResponseWriter) int
	changed chan struct{}
}

func newReceiver(t testing.TB, respond func(n int, r *http.Request, w http.ResponseWriter) int) *receiver {
	rc := &receiver{t: t, respond: respond, changed: make(chan struct{}, 1)}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, received{At: time.Now(), Header: r.Header.Clone(), Body: body})
	n := len(rc.got)
	rc.mu.Unlock()
	status := http.StatusOK
	if rc.respond != nil {
		status = rc.respond(n, r, w)
	}
	w.WriteHeader(status)
	select {
	case rc.changed <- struct{}{}:
	default:
	}
}

// URL is where the receiver listens.
func (rc *receiver) URL() string { return rc.srv.URL + "/hook" }

// Requests returns what was received so far.
func (rc *receiver) Requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// WaitFor waits until at least n requests have arrived (10s at most) and
// returns them all.
func (rc *receiver) WaitFor(n int) []received {
	rc.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if got := rc.Requests(); len(got) >= n {
			return got
		}
		select {
		case <-rc.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			rc.t.Fatalf("receiver got %d requests, want %d", len(rc.Requests()), n)
		}
	}
}

// testPolicy is a retry schedule shrunk for tests: 20ms doubling to 160ms,
// deterministic (no jitter), within window.
func testPolicy(window time.Duration) domain.RetryPolicy {
	return domain.RetryPolicy{Base: 20 * time.Millisecond, Max: 160 * time.Millisecond, Window: window}
}

// deliveries lists a webhook's deliveries through the API.
func deliveries(t testing.TB, e *apitest.Env, webhookID, query string) []map[string]any {
	t.Helper()
	res := e.Get("/v1/webhooks/"+webhookID+"/deliveries?limit=100"+query, e.Admin.Key)
	res.ExpectStatus(t, http.StatusOK)
	var out []map[string]any
	for _, it := range res.JSON["data"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// waitDeliveries polls a webhook's deliveries until done says so (10s at
// most) and returns the last list.
func waitDeliveries(t testing.TB, e *apitest.Env, webhookID string, done func([]map[string]any) bool) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds := deliveries(t, e, webhookID, "")
		if done(ds) {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries never reached the expected state: %v", ds)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// allStatus reports whether there are n deliveries, all with status.
func allStatus(n int, status string) func([]map[string]any) bool {
	return func(ds []map[string]any) bool {
		if len(ds) != n {
			return false
		}
		for _, d := range ds {
			if d["status"] != status {
				return false
			}
		}
		return true
	}
}
