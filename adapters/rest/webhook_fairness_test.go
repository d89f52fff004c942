package rest_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
)

// One workspace's dead receivers hold at most a quarter of the workers,
// however many webhooks point at them: another workspace's delivery goes
// out at once, behind their backlog. With the per-webhook cap alone, four
// dead webhooks would have held every worker.
func TestWebhookWorkspaceKeepsToItsShare(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		var deadInFlight, deadMax, deadDone atomic.Int64
		release := make(chan struct{})
		dead := newReceiver(t, func(_ int, r *http.Request, _ http.ResponseWriter) int {
			n := deadInFlight.Add(1)
			defer deadInFlight.Add(-1)
			defer deadDone.Add(1)
			for m := deadMax.Load(); n > m; m = deadMax.Load() {
				if deadMax.CompareAndSwap(m, n) {
					break
				}
			}
			select { // hangs until the test ends
			case <-release:
			case <-r.Context().Done():
			}
			return http.StatusOK
		})
		other := newReceiver(t, nil)
		// 8 workers: a workspace's share is 2, a webhook's 1.
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(time.Minute), Timeout: time.Minute, Workers: 8})
		t.Cleanup(func() { close(release) })
		for range 4 {
			newWebhook(t, e, dead.URL(), "task.created")
		}
		createTasks(t, e, newProject(t, e, "DED"), 10, 4)
		dead.WaitFor(2)

		res := e.Send(http.MethodPost, "/v1/webhooks", e.Other.Key, map[string]any{"url": other.URL(), "events": []string{"project.created"}})
		res.ExpectStatus(t, http.StatusCreated)
		e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "Other", "key": "OTH"}).ExpectStatus(t, http.StatusCreated)
		other.WaitFor(1)
		if done := deadDone.Load(); done != 0 {
			t.Fatalf("%d dead attempts ended before the other workspace's delivery; the test proves nothing", done)
		}
		if m := deadMax.Load(); m > 2 {
			t.Fatalf("one workspace's dead receivers held %d workers at once; its share is 2", m)
		}
	})
}
