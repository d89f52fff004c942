package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// ErrWebhookSignature is the error of a delivery whose signature does not
// verify with any of the secrets given (or whose Standard Webhooks
// timestamp is more than five minutes away from this machine's clock).
var ErrWebhookSignature = errors.New("worktrack: the webhook's signature does not verify")

// SignatureHeader is the header of the signature made by hand: the
// lowercase hex HMAC-SHA256 of the body, keyed with the secret string.
const SignatureHeader = "X-service-Signature"

// VerifyWebhook checks that a delivery your endpoint received was signed
// with one of secrets (the whsec_… strings the API showed), and returns its
// event. Pass the raw body, before any JSON parsing, and the request's
// headers.
//
// It verifies the Standard Webhooks signature (webhook-id,
// webhook-timestamp, webhook-signature), which also refuses a delivery
// more than five minutes old: a replay. During a secret rotation with a
// grace period a delivery carries both secrets' signatures, so a receiver
// with either secret verifies it; pass both while you switch. A request
// without the Standard Webhooks headers is checked against
// X-service-Signature, which signs no timestamp.
//
// Deliveries are at least once: de-duplicate on the event's ID.
func VerifyWebhook(body []byte, header http.Header, secrets ...string) (*Event, error) {
	if len(secrets) == 0 {
		return nil, errors.New("worktrack: VerifyWebhook needs the webhook's secret")
	}
	if !verified(body, header, secrets) {
		return nil, ErrWebhookSignature
	}
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("worktrack: the webhook's body is not an event: %w", err)
	}
	return &e, nil
}

func verified(body []byte, header http.Header, secrets []string) bool {
	if header.Get("webhook-signature") != "" {
		for _, secret := range secrets {
			wh, err := standardwebhooks.NewWebhook(secret)
			if err == nil && wh.Verify(body, header) == nil {
				return true
			}
		}
		return false
	}
	got, err := hex.DecodeString(header.Get(SignatureHeader))
	if err != nil || len(got) == 0 {
		return false
	}
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if hmac.Equal(got, mac.Sum(nil)) {
			return true
		}
	}
	return false
}
