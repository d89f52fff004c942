package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// ErrWebhookSignature is the error of a delivery whose signature does not
// verify with any of the secrets given, whose Standard Webhooks timestamp
// is further from this machine's clock than the tolerance (a replay), or
// that carries no Standard Webhooks signature at all (unless
// AllowLegacySignature).
var ErrWebhookSignature = errors.New("worktrack: the webhook's signature does not verify")

// SignatureHeader is the header of the signature made by hand: the
// lowercase hex HMAC-SHA256 of the body, keyed with the secret string. It
// signs no timestamp.
const SignatureHeader = "X-service-Signature"

// DefaultWebhookTolerance is how far a delivery's webhook-timestamp may be
// from this machine's clock, either way, before it is refused as a replay:
// the Standard Webhooks libraries' five minutes.
const DefaultWebhookTolerance = 5 * time.Minute

// WebhookVerifier checks the deliveries of one webhook (docs/webhooks.md).
// It is safe for concurrent use.
type WebhookVerifier struct {
	secrets   []*standardwebhooks.Webhook
	raw       []string
	tolerance time.Duration
	legacy    bool
	now       func() time.Time
}

// VerifyOption configures a WebhookVerifier.
type VerifyOption func(*WebhookVerifier)

// WithTolerance sets how far a delivery's timestamp may be from this
// machine's clock (DefaultWebhookTolerance when not set). A larger one
// accepts older captured deliveries; keep it small and the clock in sync.
func WithTolerance(d time.Duration) VerifyOption {
	return func(v *WebhookVerifier) {
		if d > 0 {
			v.tolerance = d
		}
	}
}

// AllowLegacySignature also accepts a delivery that carries only
// X-service-Signature, checked by hand, for a proxy that strips the
// webhook-* headers. That signature covers no timestamp: a captured
// delivery stays valid for ever, so de-duplicate on the event id. Off by
// default: a delivery without the Standard Webhooks headers is refused.
func AllowLegacySignature() VerifyOption { return func(v *WebhookVerifier) { v.legacy = true } }

// NewWebhookVerifier returns a verifier for the webhook whose signing
// secrets (the whsec_… strings the API showed) are secrets: one, or, during
// a rotation with a grace period, the new and the old.
func NewWebhookVerifier(secrets []string, opts ...VerifyOption) (*WebhookVerifier, error) {
	if len(secrets) == 0 {
		return nil, errors.New("worktrack: a webhook verifier needs the webhook's secret")
	}
	v := &WebhookVerifier{raw: secrets, tolerance: DefaultWebhookTolerance, now: time.Now}
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			return nil, fmt.Errorf("worktrack: %q is not a webhook secret (whsec_…): %w", redact(s), err)
		}
		v.secrets = append(v.secrets, wh)
	}
	for _, o := range opts {
		o(v)
	}
	return v, nil
}

// Verify checks that a delivery your endpoint received was signed with one
// of the verifier's secrets and is recent, and returns its event. Pass the
// raw body, before any JSON parsing, and the request's headers.
//
// Deliveries are at least once: de-duplicate on the event's ID.
func (v *WebhookVerifier) Verify(body []byte, header http.Header) (*Event, error) {
	if !v.verified(body, header) {
		return nil, ErrWebhookSignature
	}
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("worktrack: the webhook's body is not an event: %w", err)
	}
	return &e, nil
}

// VerifyWebhook is NewWebhookVerifier(secrets).Verify(body, header): the
// Standard Webhooks signature (webhook-id, webhook-timestamp,
// webhook-signature), a timestamp within DefaultWebhookTolerance, and no
// delivery without them. During a secret rotation with a grace period a
// delivery carries both secrets' signatures, so a receiver with either
// secret verifies it; pass both while you switch.
func VerifyWebhook(body []byte, header http.Header, secrets ...string) (*Event, error) {
	v, err := NewWebhookVerifier(secrets)
	if err != nil {
		return nil, err
	}
	return v.Verify(body, header)
}

func (v *WebhookVerifier) verified(body []byte, header http.Header) bool {
	if header.Get("webhook-signature") != "" || header.Get("webhook-id") != "" || header.Get("webhook-timestamp") != "" {
		// Standard Webhooks: the library checks the signature over id,
		// timestamp and body; the timestamp's age is checked here, with
		// the verifier's tolerance.
		sent, err := strconv.ParseInt(header.Get("webhook-timestamp"), 10, 64)
		if err != nil {
			return false
		}
		if age := v.now().Sub(time.Unix(sent, 0)); age > v.tolerance || age < -v.tolerance {
			return false
		}
		for _, wh := range v.secrets {
			if wh.VerifyIgnoringTimestamp(body, header) == nil {
				return true
			}
		}
		return false
	}
	if !v.legacy {
		return false
	}
	got, err := hex.DecodeString(header.Get(SignatureHeader))
	if err != nil || len(got) == 0 {
		return false
	}
	for _, secret := range v.raw {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if hmac.Equal(got, mac.Sum(nil)) {
			return true
		}
	}
	return false
}

// redact shows a secret's prefix only, for error messages.
func redact(s string) string {
	if len(s) <= 8 {
		return "…"
	}
	return s[:8] + "…"
}
