package worktracktest_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"

	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/client/worktracktest"
)

// A test of your own integration starts Worktrack, drives it with the
// client (or with your code, given wt.URL and wt.AdminKey), and terminates
// it. In a test, call t.Fatal instead of log.Fatal, and register
// Terminate with t.Cleanup.
func ExampleRun() {
	ctx := context.Background()
	wt, err := worktracktest.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = wt.Terminate(ctx) }()

	c := wt.Client()
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Launch", Key: "LCH"})
	if err != nil {
		log.Fatal(err)
	}
	t, err := c.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "Write the announcement"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Title, t.Status)
}

// A test's own endpoint for webhooks: Worktrack in its container delivers
// to a handler in the test's process.
func ExampleContainer_ServeWebhooks() {
	ctx := context.Background()
	wt, err := worktracktest.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = wt.Terminate(ctx) }()

	deliveries := make(chan *client.Event, 1)
	var secret string
	url, err := wt.ServeWebhooks(ctx, "/hook", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e, err := client.VerifyWebhook(body, r.Header, secret)
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		deliveries <- e
		w.WriteHeader(http.StatusNoContent)
	}))
	if err != nil {
		log.Fatal(err)
	}
	hook, err := wt.Client().Webhooks.Create(ctx, client.WebhookCreate{URL: url, Events: []client.EventType{client.EventTypeProjectCreated}})
	if err != nil {
		log.Fatal(err)
	}
	secret = hook.Secret
	if _, err := wt.Client().Projects.Create(ctx, client.ProjectCreate{Name: "Hooked", Key: "HOOKED"}); err != nil {
		log.Fatal(err)
	}
	fmt.Println((<-deliveries).Type)
}

// In a TestMain: remove what test processes killed before their Terminate
// left behind, before the tests start more.
func ExampleClean() {
	if err := worktracktest.Clean(context.Background()); err != nil {
		log.Print(err)
	}
}
