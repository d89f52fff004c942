package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// sendAndCapture sends a through a real sender to a test server and
// returns the request's headers and body.
func sendAndCapture(t *testing.T, s *webhook.Sender, a ports.WebhookAttempt) (http.Header, []byte) {
	t.Helper()
	type seen struct {
		h http.Header
		b []byte
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Clone(), b}
	}))
	defer srv.Close()
	a.URL = srv.URL
	if res := s.Send(context.Background(), a); !res.Succeeded() {
		t.Fatalf("send: %+v", res)
	}
	r := <-got
	return r.h, r.b
}

// Every attempt carries webhook-id (the event id), webhook-timestamp (the
// sender's clock at the attempt, Unix seconds) and a webhook-signature the
// Standard Webhooks Go library accepts; with a previous secret, a second
// entry that it accepts too.
func TestSendStandardWebhooksHeaders(t *testing.T) {
	at := time.Now().Truncate(time.Second)
	s := webhook.NewSender(webhook.SenderOptions{Timeout: 2 * time.Second, AllowPrivate: true, Now: func() time.Time { return at }})
	cur, prev := domain.NewWebhookSecret(), domain.NewWebhookSecret()
	a := ports.WebhookAttempt{Secret: cur, EventID: "evt_7", EventType: domain.EventTaskCreated, Attempt: 1, Body: []byte(`{"id":"evt_7"}`)}

	h, body := sendAndCapture(t, s, a)
	if h.Get("webhook-id") != "evt_7" || h.Get("webhook-timestamp") != strconv.FormatInt(at.Unix(), 10) {
		t.Fatalf("headers: %v", h)
	}
	if sig := h.Get("webhook-signature"); !strings.HasPrefix(sig, "v1,") || strings.Contains(sig, " ") {
		t.Fatalf("webhook-signature %q: want one v1 entry", sig)
	}
	if h.Get(webhook.HeaderSignature) != webhook.Sign(cur, body) {
		t.Fatal("X-service-Signature changed")
	}
	verifyWith := func(secret string, h http.Header) error {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		return wh.Verify(body, h)
	}
	if err := verifyWith(cur, h); err != nil {
		t.Fatalf("current secret: %v", err)
	}
	if err := verifyWith(prev, h); err == nil {
		t.Fatal("another secret must not verify")
	}

	a.PreviousSecret = prev
	h, _ = sendAndCapture(t, s, a)
	entries := strings.Split(h.Get("webhook-signature"), " ")
	if len(entries) != 2 || entries[0] != webhook.StandardSignature(cur, "evt_7", at.Unix(), body) {
		t.Fatalf("webhook-signature with a previous secret: %q", entries)
	}
	for _, secret := range []string{cur, prev} {
		if err := verifyWith(secret, h); err != nil {
			t.Fatalf("with two entries: %v", err)
		}
	}
	if h.Get(webhook.HeaderSignature) != webhook.Sign(cur, body) {
		t.Fatal("X-service-Signature must use the current secret only")
	}
}

// The 40-character secrets made before secrets became 32 characters still
// sign in a way the library verifies.
func TestStandardSignatureOfOlderSecrets(t *testing.T) {
	secret := domain.WebhookSecretPrefix + domain.RandomBase62(40)
	body := []byte(`{}`)
	ts := time.Now().Unix()
	h := http.Header{}
	h.Set("webhook-id", "evt_1")
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", webhook.StandardSignature(secret, "evt_1", ts, body))
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, h); err != nil {
		t.Fatal(err)
	}
}
