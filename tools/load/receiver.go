package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// receiver is the webhook endpoint of the rest-create-webhook scenario: it
// answers every delivery 204 at once and counts them, so that the table
// measures what sending costs Worktrack, not a slow receiver.
type receiver struct {
	url        string
	deliveries atomic.Int64
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hook"}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.deliveries.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }() // lives as long as the harness
	return r, nil
}

// registerHook subscribes the receiver to task.created in the second
// workspace, over the API (the secret is sealed at rest by the server).
func (h *harness) registerHook(ctx context.Context, base string) error {
	body, err := json.Marshal(map[string]any{"url": h.receiver.url, "events": []string{"task.created"}})
	if err != nil {
		return err
	}
	if _, err := httpDo(ctx, http.MethodPost, base+"/v1/webhooks", h.hooked.secret, string(body)); err != nil {
		return fmt.Errorf("register the webhook of rest-create-webhook: %w", err)
	}
	return nil
}

// spanSink is the OTLP/HTTP endpoint of the traced backends: it reads each
// export and answers it at once, counting, so that the table measures what
// tracing costs Worktrack, not a collector.
type spanSink struct {
	url            string
	exports, bytes atomic.Int64
}

func startSpanSink() (*spanSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("span sink: %w", err)
	}
	s := &spanSink{url: "http://" + ln.Addr().String()}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.exports.Add(1)
		s.bytes.Add(n)
		// An empty ExportTraceServiceResponse: all spans accepted.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.Serve(ln) }() // lives as long as the harness
	return s, nil
}
