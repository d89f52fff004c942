package domain

import (
	"sort"
	"strings"
	"time"
)

// DisabledReason says why a webhook is inactive (docs/webhooks.md).
type DisabledReason string

// The reasons a webhook is disabled.
const (
	// DisabledFailing: every attempt failed for the disable span, with at
	// least MinFailedAttempts of them.
	DisabledFailing DisabledReason = "failing"
	// DisabledGone: the receiver answered 410 Gone.
	DisabledGone DisabledReason = "gone"
	// DisabledUser: a user set active to false.
	DisabledUser DisabledReason = "user"
)

// MinFailedAttempts is the fewest failed attempts in the span that disable
// a webhook: a webhook that rarely fires is not disabled on two failures.
const MinFailedAttempts = 10

// DefaultDisableAfter is how long every attempt must have failed before a
// webhook is disabled, by default (WORKTRACK_WEBHOOK_DISABLE_AFTER).
const DefaultDisableAfter = 72 * time.Hour

// FailureSpan is a webhook's run of failed attempts: since when every
// attempt has failed (nil: the last one succeeded, or none failed yet) and
// how many failed since. The store keeps it on the webhook's row, written
// with the attempts' outcomes.
type FailureSpan struct {
	WebhookID      string
	WorkspaceID    string
	Active         bool
	FailingSince   *time.Time
	FailedAttempts int
}

// Disables reports whether the span disables its webhook at now: active,
// every attempt failed for at least after, and at least MinFailedAttempts
// of them.
func (s FailureSpan) Disables(now time.Time, after time.Duration) bool {
	return s.Active && s.FailingSince != nil && !now.Before(s.FailingSince.Add(after)) && s.FailedAttempts >= MinFailedAttempts
}

// Disable returns the webhook inactive for reason at now; its failure span
// ends. changed is false when it already was inactive.
func (w Webhook) Disable(reason DisabledReason, now time.Time) (Webhook, bool) {
	if !w.Active {
		return w, false
	}
	now = Timestamp(now)
	w.Active, w.DisabledReason, w.DisabledAt = false, reason, &now
	w.FailingSince, w.FailedAttempts = nil, 0
	w.UpdatedAt = now
	return w, true
}

// setActive is Apply's change of active by a user: off is disabled by the
// user; on clears the reason and starts a new failure span.
func (w Webhook) setActive(active bool, now time.Time) Webhook {
	if active == w.Active {
		return w
	}
	if !active {
		w, _ = w.Disable(DisabledUser, now)
		return w
	}
	w.Active, w.DisabledReason, w.DisabledAt = true, "", nil
	w.FailingSince, w.FailedAttempts = nil, 0
	return w
}

// Limits of a webhook's custom headers.
const (
	MaxWebhookHeaders     = 10
	MaxHeaderNameLength   = 100
	MaxHeaderValueLength  = 1000
	webhookHeadersMessage = "Must be an object of at most 10 header names (HTTP tokens of at most 100 characters, not one the service sets) to values of at most 1000 printable ASCII characters"
)

// reservedHeaders are the headers the service sets on a delivery, the
// hop-by-hop ones, and those that change how the body is sent or read
// (Expect, Content-Encoding), which a webhook may not set; every webhook-*
// (Standard Webhooks) and X-service-* header is reserved too. Names are
// compared by headerKey.
var reservedHeaders = map[string]bool{
	"content-type": true, "user-agent": true, "content-length": true, "host": true,
	"connection": true, "keep-alive": true, "proxy-authenticate": true, "proxy-authorization": true,
	"proxy-connection": true, "te": true, "trailer": true, "transfer-encoding": true, "upgrade": true,
	"accept-encoding": true, "content-encoding": true, "expect": true,
}

// headerKey is how header names are compared: lower-case, with "_" read as
// "-", because the receivers' frameworks (CGI, WSGI, Rack, PHP) read the
// two alike, so X_service_Signature would reach them as X-service-Signature.
func headerKey(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// ParseWebhookHeaders validates a webhook's custom headers (param
// headers): names are HTTP tokens, unique without regard to case.
func ParseWebhookHeaders(in map[string]string) (map[string]string, error) {
	bad := func(detail string) error { return Invalid("headers", "%s: %s.", webhookHeadersMessage, detail) }
	if len(in) > MaxWebhookHeaders {
		return nil, bad("there are more than 10")
	}
	seen := map[string]bool{}
	out := make(map[string]string, len(in))
	for _, name := range sortedKeys(in) {
		key := headerKey(name)
		switch {
		case name == "" || len(name) > MaxHeaderNameLength || !isToken(name):
			return nil, bad("\"" + name + "\" is not an HTTP header name of at most 100 characters")
		case reservedHeaders[key] || strings.HasPrefix(key, "webhook-") || strings.HasPrefix(key, "x-service-"):
			return nil, bad(name + " is set by the service")
		case seen[key]:
			return nil, bad(name + " is given twice")
		case len(in[name]) > MaxHeaderValueLength || !printableASCII(in[name]):
			return nil, bad("the value of " + name + " is not at most 1000 printable ASCII characters")
		}
		seen[key] = true
		out[name] = in[name]
	}
	return out, nil
}

// RedactedHeaderValue stands for every custom header's value in an event's
// data: events carry the names of a webhook's headers, never their values.
const RedactedHeaderValue = "[redacted]"

// Header is one custom header of a webhook.
type Header struct {
	Name  string
	Value string
}

// HeaderList is the webhook's headers sorted by name, for APIs that list
// them.
func (w Webhook) HeaderList() []Header {
	out := make([]Header, 0, len(w.Headers))
	for _, name := range sortedKeys(w.Headers) {
		out = append(out, Header{Name: name, Value: w.Headers[name]})
	}
	return out
}

// HeaderMap turns a list of headers into the map a webhook holds; a name
// given twice is validation_failed (param headers).
func HeaderMap(list []Header) (map[string]string, error) {
	out := make(map[string]string, len(list))
	for _, h := range list {
		if _, dup := out[h.Name]; dup {
			return nil, Invalid("headers", "%s: %s is given twice.", webhookHeadersMessage, h.Name)
		}
		out[h.Name] = h.Value
	}
	return out, nil
}

// WebhookHeaderValues is a headers object as an API decoded it, whose values
// may be null (JSON's null): a header's value is a string, "" when empty,
// so a null one is validation_failed (param headers) naming the header,
// rather than read as "". The first null value by name is named.
func WebhookHeaderValues(in map[string]*string) (map[string]string, error) {
	out := make(map[string]string, len(in))
	for _, name := range sortedKeys(in) {
		if in[name] == nil {
			return nil, Invalid("headers", "%s: the value of %s is null, not a string.", webhookHeadersMessage, name)
		}
		out[name] = *in[name]
	}
	return out, nil
}

// webhookHeaders is a present headers field: null is refused (send {} for
// none).
func webhookHeaders(f Field[map[string]string]) (map[string]string, error) {
	h, err := required("headers", f)
	if err != nil {
		return nil, err
	}
	return ParseWebhookHeaders(h)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	for _, c := range []byte(s) {
		if !tokenChar(c) {
			return false
		}
	}
	return true
}

func tokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func printableASCII(s string) bool {
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

func sameHeaders(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
