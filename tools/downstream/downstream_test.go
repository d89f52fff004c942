package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/client/worktracktest"
)

// The program's steps against a Worktrack that worktracktest starts in
// containers, with no variable set on a machine without an image
// registry, and a webhook delivered from the container to this test's
// process and verified with the client.
func TestAgainstWorktrack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wt, err := worktracktest.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wt.Terminate(context.Background()) })
	c := wt.Client(client.WithUserAgent("downstream/1"))

	type delivery struct {
		body   []byte
		header http.Header
	}
	got := make(chan delivery, 8)
	url, err := wt.ServeWebhooks(ctx, "/hook", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{body, r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	if err != nil {
		t.Fatal(err)
	}
	hook, err := c.Webhooks.Create(ctx, client.WebhookCreate{URL: url, Events: []client.EventType{client.EventTypeProjectCreated}})
	if err != nil {
		t.Fatal(err)
	}

	if err := run(ctx, c); err != nil {
		t.Fatal(err)
	}

	select {
	case d := <-got:
		e, err := client.VerifyWebhook(d.body, d.header, hook.Secret)
		if err != nil {
			t.Fatalf("the delivery does not verify: %v", err)
		}
		p, err := e.Project()
		if err != nil || p.Name != "Downstream" {
			t.Fatalf("delivered %s of %+v (%v), want the project run created", e.Type, p, err)
		}
	case <-ctx.Done():
		t.Fatal("no webhook delivery reached the test's process")
	}
}
