package e2e

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes each export
// request with OTLP's own protobuf definitions and keeps its spans with
// their resource's service.name.
type otlpReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	service map[string]bool
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{service: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(req.Body)
		var export coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &export); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					r.service[a.GetValue().GetStringValue()] = true
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				r.spans = append(r.spans, ss.GetSpans()...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// waitFor returns the received spans once match holds for one of them.
func (r *otlpReceiver) waitFor(t *testing.T, what string, match func(*tracepb.Span) bool) (*tracepb.Span, []*tracepb.Span) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		spans := append([]*tracepb.Span(nil), r.spans...)
		r.mu.Unlock()
		for _, s := range spans {
			if match(s) {
				return s, spans
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector received no span %s (%d spans)", what, len(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == key {
			if v := a.GetValue(); v.GetStringValue() != "" {
				return v.GetStringValue()
			}
			return strings.Trim(a.GetValue().String(), " ")
		}
	}
	return ""
}

// reply is a response whose body send has read and decoded.
type reply struct {
	StatusCode int
	Header     http.Header
}

// send makes a request with key and JSON body, with extra headers, and
// returns its answer (body decoded when JSON).
func send(t *testing.T, method, url, key string, body any, header map[string]string) (reply, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return reply{StatusCode: res.StatusCode, Header: res.Header}, out
}

// The binary, configured by OTEL_* alone, exports to a real OTLP/HTTP
// receiver: a read's server span continuing the caller's traceparent with
// its statements, a create's delivery attempt in the create's trace with
// the traceparent its receiver got, the service name of
// OTEL_SERVICE_NAME; and its log lines of a traced request carry the
// trace's id.
func TestTheBinaryExportsTracesOverOTLP(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	bin := buildBinary(t)
	collector := newOTLPReceiver(t)
	var mu sync.Mutex
	var deliveries []string // traceparent headers received
	hookRx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deliveries = append(deliveries, r.Header.Get("traceparent"))
		mu.Unlock()
	}))
	t.Cleanup(hookRx.Close)
	s := proctest.Serve(t, bin, t.TempDir(), "DATABASE_URL="+dbURL, "WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true", "WORKTRACK_LOG_FORMAT=json",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+collector.srv.URL, "OTEL_SERVICE_NAME=worktrack-e2e", "OTEL_BSP_SCHEDULE_DELAY=50")
	key := proctest.SecretRe.FindString(s.Stderr.String())

	if res, _ := send(t, http.MethodPost, s.Base+"/v1/webhooks", key, map[string]any{"url": hookRx.URL, "events": []string{"task.created"}}, nil); res.StatusCode != http.StatusCreated {
		t.Fatalf("create webhook: %d", res.StatusCode)
	}
	_, prj := send(t, http.MethodPost, s.Base+"/v1/projects", key, map[string]any{"name": "Traced", "key": "TRC"}, nil)
	res, tsk := send(t, http.MethodPost, s.Base+"/v1/projects/"+prj["id"].(string)+"/tasks", key, map[string]any{"title": "Trace me"}, nil)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create task: %d %v", res.StatusCode, tsk)
	}
	createID := res.Header.Get("X-Request-Id")

	callerTrace, callerSpan := "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	res, _ = send(t, http.MethodGet, s.Base+"/v1/tasks/"+tsk["id"].(string), key, nil,
		map[string]string{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("read: %d", res.StatusCode)
	}
	read, spans := collector.waitFor(t, "for the read", func(s *tracepb.Span) bool {
		return hex.EncodeToString(s.GetTraceId()) == callerTrace && s.GetKind() == tracepb.Span_SPAN_KIND_SERVER
	})
	if read.GetName() != "GET /v1/tasks/:taskId" || hex.EncodeToString(read.GetParentSpanId()) != callerSpan {
		t.Errorf("read span %q parent %x", read.GetName(), read.GetParentSpanId())
	}
	statements := 0
	for _, sp := range spans {
		if string(sp.GetParentSpanId()) == string(read.GetSpanId()) && attr(sp, "db.query.text") != "" {
			statements++
		}
	}
	if statements == 0 {
		t.Error("no statement span under the read")
	}

	create, _ := collector.waitFor(t, "for the create", func(s *tracepb.Span) bool { return attr(s, "worktrack.request.id") == createID })
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for got == "" && time.Now().Before(deadline) {
		mu.Lock()
		if len(deliveries) > 0 {
			got = deliveries[0]
		}
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	parts := strings.Split(got, "-")
	if len(parts) != 4 || parts[1] != hex.EncodeToString(create.GetTraceId()) {
		t.Fatalf("delivery traceparent %q, want the create's trace %x", got, create.GetTraceId())
	}
	attempt, _ := collector.waitFor(t, "for the delivery attempt", func(s *tracepb.Span) bool { return hex.EncodeToString(s.GetSpanId()) == parts[2] })
	if attempt.GetName() != "POST" || attempt.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("attempt span %q kind %v", attempt.GetName(), attempt.GetKind())
	}
	collector.mu.Lock()
	named := collector.service["worktrack-e2e"]
	collector.mu.Unlock()
	if !named {
		t.Error("spans not exported under OTEL_SERVICE_NAME")
	}
	// serve buffers its info lines; stopping flushes them.
	if code := s.Stop(t); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	if !strings.Contains(s.Stderr.String(), `"trace_id":"`+callerTrace+`"`) {
		t.Errorf("no log line carries the read's trace id:\n%s", s.Stderr.String())
	}
}

// A collector that accepts connections and never answers: every request is
// still answered, and the process still stops promptly.
func TestADeadCollectorLeavesRequestsServed(t *testing.T) {
	bin := buildBinary(t)
	stuck := make(chan struct{})
	collector := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(collector.Close)
	t.Cleanup(func() { close(stuck) })
	s := proctest.Serve(t, bin, t.TempDir(), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_BSP_SCHEDULE_DELAY=10")
	key := proctest.SecretRe.FindString(s.Stderr.String())
	for i := range 300 {
		if res, body := send(t, http.MethodGet, s.Base+"/v1/users/me", key, nil, nil); res.StatusCode != http.StatusOK {
			t.Fatalf("request %d with the collector stuck: %d %v", i, res.StatusCode, body)
		}
	}
	if code := s.Stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, s.Stderr.String())
	}
}
