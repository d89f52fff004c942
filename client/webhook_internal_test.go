package client

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// A delivery signed an hour ago (captured, then sent again) is refused
// with the default tolerance, accepted by a verifier told to tolerate two
// hours, and one signed a minute ago passes either way; the clock runs
// both ways (a timestamp an hour ahead is refused too). Signed with the
// Standard Webhooks library, as the server signs.
func TestWebhookTolerance(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"evt_1","object":"event","type":"task.created","created_at":"2026-12-06T09:00:00.000000Z","data":{}}`)
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	signed := func(at time.Time) http.Header {
		sig, err := wh.Sign("evt_1", at, body)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set("webhook-id", "evt_1")
		h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
		h.Set("webhook-signature", sig)
		return h
	}
	verifier := func(opts ...VerifyOption) *WebhookVerifier {
		v, err := NewWebhookVerifier([]string{secret}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		v.now = func() time.Time { return now }
		return v
	}
	for _, c := range []struct {
		name   string
		at     time.Time
		opts   []VerifyOption
		passes bool
	}{
		{"a minute old", now.Add(-time.Minute), nil, true},
		{"an hour old", now.Add(-time.Hour), nil, false},
		{"an hour ahead", now.Add(time.Hour), nil, false},
		{"an hour old, two hours tolerated", now.Add(-time.Hour), []VerifyOption{WithTolerance(2 * time.Hour)}, true},
		{"a minute old, 30 s tolerated", now.Add(-time.Minute), []VerifyOption{WithTolerance(30 * time.Second)}, false},
	} {
		_, err := verifier(c.opts...).Verify(body, signed(c.at))
		if c.passes && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !c.passes && !errors.Is(err, ErrWebhookSignature) {
			t.Errorf("%s: %v, want ErrWebhookSignature", c.name, err)
		}
	}
	if _, err := NewWebhookVerifier(nil); err == nil {
		t.Error("a verifier without a secret")
	}
	if _, err := NewWebhookVerifier([]string{"whsec_not base64!"}); err == nil {
		t.Error("a verifier with a secret that is not one")
	}
}
