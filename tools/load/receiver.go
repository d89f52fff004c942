package main

import (
	"context"
	"encoding/json"
	"fmt"
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
