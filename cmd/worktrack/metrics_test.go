package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func call(t *testing.T, method, url, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// labels flattens a sample's labels.
func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// has reports whether family holds a sample with at least these labels.
func has(f *dto.MetricFamily, want map[string]string) bool {
	if f == nil {
		return false
	}
next:
	for _, m := range f.GetMetric() {
		got := labels(m)
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return true
	}
	return false
}

// GET /metrics after real REST, GraphQL and webhook traffic: the families
// operators alert on, labelled by route template (never a raw path), and
// the bearer token when one is configured.
func TestMetricsAfterRealTraffic(t *testing.T) {
	var received atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		received.Add(1)
	}))
	defer rc.Close()
	const token = "metrics-s3cret"
	p := startServe(t, t.TempDir(), "WORKTRACK_METRICS_TOKEN="+token, "WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true")
	key := secretRe.FindString(p.Stderr.String())

	if code, body := call(t, http.MethodPost, p.Base+"/v1/webhooks", key, `{"url":"`+rc.URL+`/hook","events":["project.created"]}`); code != 201 {
		t.Fatalf("create webhook: %d %s", code, body)
	}
	code, body := call(t, http.MethodPost, p.Base+"/v1/projects", key, `{"name":"Metrics","key":"MET"}`)
	if code != 201 {
		t.Fatalf("create project: %d %s", code, body)
	}
	id := body[strings.Index(body, `"prj_`)+1:]
	id = id[:strings.Index(id, `"`)]
	if code, _ := call(t, http.MethodGet, p.Base+"/v1/projects/"+id, key, ""); code != 200 {
		t.Fatalf("get project: %d", code)
	}
	if code, _ := call(t, http.MethodGet, p.Base+"/v1/projects/prj_0000000000000000000000nope", key, ""); code != 404 {
		t.Fatalf("get an absent project: %d", code)
	}
	if code, _ := call(t, http.MethodPost, p.Base+"/graphql", key, `{"query":"{ me { email } }"}`); code != 200 {
		t.Fatalf("graphql: %d", code)
	}
	if code, _ := call(t, http.MethodGet, p.Base+"/v1/no/such/route", key, ""); code != 404 {
		t.Fatalf("unmatched route: %d", code)
	}
	deadline := time.Now().Add(30 * time.Second)
	for received.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the webhook was never delivered:\n%s", p.Stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	for _, tc := range []struct{ auth, code string }{{"", "missing_api_key"}, {"wrong", "invalid_api_key"}, {key, "invalid_api_key"}} {
		if status, body := call(t, http.MethodGet, p.Base+"/metrics", tc.auth, ""); status != 401 || !strings.Contains(body, `"code":"`+tc.code+`"`) {
			t.Fatalf("/metrics with %q: %d %s", tc.auth, status, body)
		}
	}
	// The delivery is counted once its outcome is recorded, just after the
	// receiver answered.
	var families map[string]*dto.MetricFamily
	for {
		status, body := call(t, http.MethodGet, p.Base+"/metrics", token, "")
		if status != 200 {
			t.Fatalf("/metrics with the token: %d %s", status, body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		var err error
		if families, err = parser.TextToMetricFamilies(strings.NewReader(body)); err != nil {
			t.Fatalf("the exposition does not parse: %v\n%s", err, body)
		}
		// The backlog is read at most every 5 seconds: an earlier scrape's
		// reading may still show the delivery pending.
		f := families["worktrack_webhook_deliveries_total"]
		pending := families["worktrack_webhook_pending_deliveries"]
		if counter(f, "succeeded") == 1 && pending != nil && pending.GetMetric()[0].GetGauge().GetValue() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no succeeded delivery counted:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}

	requests := families["worktrack_http_requests_total"]
	for _, want := range []map[string]string{
		{"api": "rest", "route": "/v1/projects", "method": "POST", "status": "201"},
		{"api": "rest", "route": "/v1/projects/:projectId", "method": "GET", "status": "200"},
		{"api": "rest", "route": "/v1/projects/:projectId", "method": "GET", "status": "404"},
		{"api": "graphql", "route": "/graphql", "method": "POST", "status": "200"},
		{"api": "other", "route": "unmatched", "method": "GET", "status": "404"},
		{"api": "other", "route": "/metrics", "method": "GET", "status": "401"},
	} {
		if !has(requests, want) {
			t.Errorf("worktrack_http_requests_total has no sample %v", want)
		}
	}
	for _, m := range requests.GetMetric() {
		if r := labels(m)["route"]; strings.Contains(r, "prj_") || strings.Contains(r, "/no/such") {
			t.Errorf("a raw path as a route label: %q", r)
		}
	}
	if f := families["worktrack_http_request_duration_seconds"]; f.GetType() != dto.MetricType_HISTOGRAM ||
		!has(f, map[string]string{"api": "rest", "route": "/v1/projects", "method": "POST"}) {
		t.Errorf("worktrack_http_request_duration_seconds: %v", f)
	}
	for _, name := range []string{
		"worktrack_webhook_pending_deliveries", "worktrack_webhook_oldest_pending_seconds",
		"go_sql_open_connections", "go_goroutines", "process_resident_memory_bytes",
	} {
		if families[name] == nil {
			t.Errorf("no family %s", name)
		}
	}
	if !has(families["go_sql_open_connections"], map[string]string{"db_name": "api"}) {
		t.Errorf("the API's pool is not labelled db_name=api: %v", families["go_sql_open_connections"])
	}
	if v := families["worktrack_webhook_pending_deliveries"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("pending deliveries after the only one succeeded: %v", v)
	}

	// The database seats: their number (four a core, at least 8, at most
	// SQLite's pool of 16), none held or waited for at rest, and a wait
	// observed for every seated statement of the requests above.
	gauge := func(name string) float64 {
		f := families[name]
		if f.GetType() != dto.MetricType_GAUGE || len(f.GetMetric()) != 1 {
			t.Fatalf("%s: %v, want one gauge", name, f)
		}
		return f.GetMetric()[0].GetGauge().GetValue()
	}
	if got, want := gauge("worktrack_db_seats"), float64(min(max(4*runtime.GOMAXPROCS(0), 8), 16)); got != want {
		t.Errorf("worktrack_db_seats = %v, want %v", got, want)
	}
	if in, q := gauge("worktrack_db_seats_in_use"), gauge("worktrack_db_seat_queue"); in != 0 || q != 0 {
		t.Errorf("at rest: %v seats in use, %v waiting; want none", in, q)
	}
	if f := families["worktrack_db_seat_wait_seconds"]; f.GetType() != dto.MetricType_HISTOGRAM ||
		f.GetMetric()[0].GetHistogram().GetSampleCount() < 3 {
		t.Errorf("worktrack_db_seat_wait_seconds: %v, want a histogram with a wait per seated statement", f)
	}

	// The access log says where each request's time went: waiting for
	// seats and holding them, within its latency. (It is buffered: the
	// lines are all out once the process has stopped.)
	p.Stop(t)
	found := false
	for _, line := range strings.Split(p.Stderr.String(), "\n") {
		var raw map[string]any
		if json.Unmarshal([]byte(line), &raw) != nil || raw["msg"] != "request" || raw["path"] != "/v1/projects/"+id || raw["status"] != 200.0 {
			continue
		}
		latency, _ := raw["latency_ms"].(float64)
		queued, okQ := raw["queued_ms"].(float64)
		spent, okD := raw["db_ms"].(float64)
		if !okQ || !okD || spent <= 0 || queued < 0 || queued+spent > latency {
			t.Errorf("GET /v1/projects/%s logged queued_ms %v, db_ms %v, latency_ms %v: want both, db_ms > 0, within the latency", id, raw["queued_ms"], raw["db_ms"], latency)
		}
		found = true
	}
	if !found {
		t.Errorf("no access log line of GET /v1/projects/%s:\n%s", id, p.Stderr.String())
	}
}

func counter(f *dto.MetricFamily, outcome string) float64 {
	for _, m := range f.GetMetric() {
		if labels(m)["outcome"] == outcome {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// Refusals for a shared limit are counted by reason, every reason present
// from the start.
func TestMetricsCountRefusalsByReason(t *testing.T) {
	p := startServe(t, t.TempDir(), "WORKTRACK_AUTH_FAILURE_LIMIT=2")
	for i := range 3 {
		code, _ := call(t, http.MethodGet, p.Base+"/v1/users/me", "wtk_"+strings.Repeat("x", 40), "")
		if want := map[bool]int{true: 429, false: 401}[i == 2]; code != want {
			t.Fatalf("bad key %d: %d, want %d", i+1, code, want)
		}
	}
	_, body := call(t, http.MethodGet, p.Base+"/metrics", "", "")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	refusals := families["worktrack_refusals_total"]
	for _, m := range refusals.GetMetric() {
		want := 0.0
		if labels(m)["reason"] == "auth_failures" {
			want = 1
		}
		if got := m.GetCounter().GetValue(); got != want {
			t.Errorf("refusals %v: %v, want %v", labels(m), got, want)
		}
	}
	for _, reason := range []string{"auth_failures", "rate_limit", "graphql_cost", "sockets_per_key", "webhooks_per_workspace"} {
		if !has(refusals, map[string]string{"reason": reason}) {
			t.Errorf("no refusals sample for %s", reason)
		}
	}
	p.Stop(t)
}
