package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/worktrack/worktrack/client"
)

// delivery is one request a receiver got.
type delivery struct {
	body   []byte
	header http.Header
}

// receiver is an endpoint on this machine that hands each delivery to the
// example and answers 204.
func receiver() (*httptest.Server, <-chan delivery) {
	got := make(chan delivery, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{body, r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	return srv, got
}

// A receiver checks each delivery's signature with the webhook's secret
// before it trusts the body.
func ExampleVerifyWebhook() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	srv, deliveries := receiver()
	defer srv.Close()
	wh, err := c.Webhooks.Create(ctx, client.WebhookCreate{URL: srv.URL + "/hook", Events: []client.EventType{client.EventTypeTaskCreated}})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = c.Webhooks.Delete(ctx, wh.ID) }()
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Hooks", Key: "HOOKS"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "Ring the bell"}); err != nil {
		log.Fatal(err)
	}

	d := <-deliveries // in your receiver: the raw body and the headers of the request
	event, err := client.VerifyWebhook(d.body, d.header, wh.Secret)
	if err != nil {
		log.Fatal(err) // answer 401: it is not from Worktrack, or it is a replay
	}
	t, _ := event.Task()
	fmt.Println(event.Type, t.Title)
	// Output: task.created Ring the bell
}

// A verifier refuses a delivery whose Standard Webhooks headers were
// stripped, unless told to accept the legacy signature, which signs no
// timestamp.
func ExampleNewWebhookVerifier() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	srv, deliveries := receiver()
	defer srv.Close()
	wh, err := c.Webhooks.Create(ctx, client.WebhookCreate{URL: srv.URL + "/hook", Events: []client.EventType{client.EventTypeProjectCreated}})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = c.Webhooks.Delete(ctx, wh.ID) }()
	if _, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Strip", Key: "STRIP"}); err != nil {
		log.Fatal(err)
	}
	d := <-deliveries
	for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		d.header.Del(h) // as a proxy that drops them would
	}

	strict, err := client.NewWebhookVerifier([]string{wh.Secret})
	if err != nil {
		log.Fatal(err)
	}
	_, err = strict.Verify(d.body, d.header)
	fmt.Println(errors.Is(err, client.ErrWebhookSignature))

	lenient, err := client.NewWebhookVerifier([]string{wh.Secret}, client.AllowLegacySignature())
	if err != nil {
		log.Fatal(err)
	}
	event, err := lenient.Verify(d.body, d.header)
	fmt.Println(event.Type, err)
	// Output:
	// true
	// project.created <nil>
}
