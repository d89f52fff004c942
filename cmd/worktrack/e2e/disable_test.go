package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

// getJSON GETs url with key and decodes the answer, which must be 200.
func getJSON(t *testing.T, url, key string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, out)
	}
	return out
}

// Two serve processes on one PostgreSQL database both attempt a failing
// webhook's deliveries and both see its failure span cross the limit; the
// webhook is disabled once, with one webhook.disabled event in the log and
// one delivery of it to the workspace's other webhook.
func TestTwoProcessesDisableAWebhookOnce(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	bin := buildBinary(t)
	env := []string{"DATABASE_URL=" + dbURL, "WORKTRACK_RATE_LIMIT=1000000000", "WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true",
		"WORKTRACK_WEBHOOK_BACKOFF_BASE=10ms", "WORKTRACK_WEBHOOK_BACKOFF_MAX=40ms",
		"WORKTRACK_WEBHOOK_RETRY_WINDOW=1s", "WORKTRACK_WEBHOOK_DISABLE_AFTER=1500ms"}
	a := proctest.Serve(t, bin, t.TempDir(), env...)
	key := proctest.SecretRe.FindString(a.Stderr.String())
	b := proctest.Serve(t, bin, t.TempDir(), env...)

	var failed atomic.Int64
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(dead.Close)
	var mu sync.Mutex
	notices := map[string]int{} // webhook-id header -> deliveries received
	watcher := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		notices[r.Header.Get("Webhook-Id")]++
		mu.Unlock()
	}))
	t.Cleanup(watcher.Close)

	hook := post(t, a.Base+"/v1/webhooks", key, map[string]any{"url": dead.URL, "events": []string{"task.created"}})["id"].(string)
	post(t, a.Base+"/v1/webhooks", key, map[string]any{"url": watcher.URL, "events": []string{"webhook.disabled"}})
	prj := post(t, a.Base+"/v1/projects", key, map[string]any{"name": "Doomed", "key": "DOOM"})["id"].(string)

	// Fresh tasks on both processes keep both dispatchers attempting
	// until the webhook is off.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		for _, base := range []string{a.Base, b.Base} {
			post(t, base+"/v1/projects/"+prj+"/tasks", key, map[string]any{"title": fmt.Sprint("t", i)})
		}
		if w := getJSON(t, b.Base+"/v1/webhooks/"+hook, key); w["active"] == false {
			if w["disabled_reason"] != "failing" {
				t.Fatalf("disabled: %v", w)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never disabled after %d failed attempts\n%s\n%s", failed.Load(), a.Stderr.String(), b.Stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // time for a second disable, were there one, and for its delivery
	evs := getJSON(t, a.Base+"/v1/events?type=webhook.disabled", key)["data"].([]any)
	if len(evs) != 1 {
		t.Fatalf("%d webhook.disabled events in the log, want 1: %v", len(evs), evs)
	}
	mu.Lock()
	defer mu.Unlock()
	id := evs[0].(map[string]any)["id"].(string)
	if len(notices) != 1 || notices[id] != 1 {
		t.Fatalf("the other webhook received %v, want %s once", notices, id)
	}
	t.Logf("disabled after %d failed attempts over two processes", failed.Load())
}
