package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/metrics"
)

// /metrics costs no more than a constant: scrapes within BacklogTTL of a
// reading of the backlog serve that reading, however many there are.
func TestBacklogIsReadAtMostOncePerTTL(t *testing.T) {
	m := metrics.New()
	var reads atomic.Int64
	m.WatchBacklog(func(context.Context) (int64, time.Time, bool, error) {
		reads.Add(1)
		return 7, time.Now(), true, nil
	})
	for range 20 {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		if !strings.Contains(string(body), "worktrack_webhook_pending_deliveries 7") {
			t.Fatalf("scrape without the backlog:\n%s", body)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("20 scrapes read the backlog %d times, want once", n)
	}
}
