package domain

import (
	"net/url"
	"strings"
	"time"
)

// WebhookSecretPrefix starts every webhook signing secret.
const WebhookSecretPrefix = "whsec_"

// Webhook is a subscription of a URL to event types. Secret signs every
// delivery; it is shown only when created or rotated. After a rotation with
// a grace period, PreviousSecret also signs deliveries (a second Standard
// Webhooks signature) until PreviousSecretExpiresAt, so that receivers can
// switch secrets without refusing anything.
//
// An inactive webhook says why (DisabledReason, DisabledAt). Headers are
// sent with every delivery. FailingSince and FailedAttempts are its run of
// failed attempts (FailureSpan), which disables it when it lasts.
type Webhook struct {
	ID                      string
	WorkspaceID             string
	URL                     string
	Events                  []EventType
	Active                  bool
	Headers                 map[string]string
	DisabledReason          DisabledReason
	DisabledAt              *time.Time
	Secret                  string
	PreviousSecret          string
	PreviousSecretExpiresAt *time.Time
	FailingSince            *time.Time
	FailedAttempts          int
	CreatedAt               time.Time
	UpdatedAt               time.Time
}

// webhookSecretChars is the length of a secret after its prefix: 32 base62
// characters carry 190 bits, and being a multiple of four characters of the
// base64 alphabet they are also valid standard base64 (24 bytes), which is
// how Standard Webhooks libraries read the key.
const webhookSecretChars = 32

// NewWebhookSecret returns a fresh signing secret.
func NewWebhookSecret() string { return WebhookSecretPrefix + RandomBase62(webhookSecretChars) }

// MaxWebhooksPerWorkspace is the most webhooks a workspace has: each
// webhook's deliveries take a share of the dispatcher's workers.
const MaxWebhooksPerWorkspace = 20

// MaxPreviousSecretGrace bounds how long a rotated-out secret keeps signing
// deliveries: a week.
const MaxPreviousSecretGrace = 7 * 24 * time.Hour

// PreviousSecretGrace validates how long, in whole seconds, the previous
// secret keeps signing after a rotation: absent means 0 (it stops at once);
// otherwise an integer from 0 to 604800. param names the field in errors.
func PreviousSecretGrace(param string, in Field[int64]) (time.Duration, error) {
	if !in.Present {
		return 0, nil
	}
	limit := int64(MaxPreviousSecretGrace / time.Second)
	if in.Null || in.Value < 0 || in.Value > limit {
		return 0, Invalid(param, "Must be an integer number of seconds from 0 to %d.", limit)
	}
	return time.Duration(in.Value) * time.Second, nil
}

// WebhookFields are a webhook's writable fields as a request carries them,
// unvalidated: NewWebhook takes them for a registration (url and events
// required, active true unless given) and Webhook.Apply for a merge patch.
type WebhookFields struct {
	URL     Field[string]
	Events  Field[[]string]
	Active  Field[bool]
	Headers Field[map[string]string]
}

// NewWebhook validates a webhook about to be created. Whether the URL's host
// is a private address is checked by the caller, which can resolve names.
func NewWebhook(id, workspaceID string, in WebhookFields, now time.Time) (Webhook, error) {
	u, err := mandatory("url", in.URL)
	if err != nil {
		return Webhook{}, err
	}
	if u, err = ValidateWebhookURL(u); err != nil {
		return Webhook{}, err
	}
	names, err := mandatory("events", in.Events)
	if err != nil {
		return Webhook{}, err
	}
	evs, err := ParseEventTypes("events", names)
	if err != nil {
		return Webhook{}, err
	}
	headers := map[string]string{}
	if in.Headers.Present {
		if headers, err = webhookHeaders(in.Headers); err != nil {
			return Webhook{}, err
		}
	}
	now = Timestamp(now)
	w := Webhook{
		ID: id, WorkspaceID: workspaceID, URL: u, Events: evs, Active: true, Headers: headers,
		Secret: NewWebhookSecret(), CreatedAt: now, UpdatedAt: now,
	}
	if in.Active.Present {
		active, err := required("active", in.Active)
		if err != nil {
			return Webhook{}, err
		}
		w = w.setActive(active, now)
	}
	return w, nil
}

// ValidateWebhookURL checks the shape of a delivery URL: absolute http or
// https, a host, at most 2048 characters, no user-info.
func ValidateWebhookURL(raw string) (string, error) {
	bad := func(why string) error { return Invalid("url", "Must %s.", why) }
	if len(raw) > 2048 {
		return "", bad("be at most 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return "", bad("be an absolute http or https URL")
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return "", bad("use http or https")
	}
	if u.User != nil {
		return "", bad("not contain user information")
	}
	if u.Hostname() == "" {
		return "", bad("name a host")
	}
	if u.Fragment != "" {
		return "", bad("not contain a fragment")
	}
	return raw, nil
}

// ParseEventTypes validates a subscription list: 1 to 5 known types,
// duplicates collapsed (and counted after collapsing), order kept.
func ParseEventTypes(param string, names []string) ([]EventType, error) {
	seen := map[EventType]bool{}
	var out []EventType
	for _, n := range names {
		t, err := ParseEventType(param, n)
		if err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, Invalid(param, "Must hold at least one event type.")
	}
	return out, nil
}

// Subscribes reports whether the webhook receives events of type t.
func (w Webhook) Subscribes(t EventType) bool {
	for _, e := range w.Events {
		if e == t {
			return true
		}
	}
	return false
}

// Apply returns the webhook with patch applied and whether anything changed.
func (w Webhook) Apply(patch WebhookFields, now time.Time) (Webhook, bool, error) {
	next := w
	changed := false
	if patch.URL.Present {
		v, err := required("url", patch.URL)
		if err != nil {
			return w, false, err
		}
		if v, err = ValidateWebhookURL(v); err != nil {
			return w, false, err
		}
		changed = changed || v != w.URL
		next.URL = v
	}
	if patch.Events.Present {
		v, err := required("events", patch.Events)
		if err != nil {
			return w, false, err
		}
		evs, err := ParseEventTypes("events", v)
		if err != nil {
			return w, false, err
		}
		changed = changed || !sameEvents(evs, w.Events)
		next.Events = evs
	}
	if patch.Headers.Present {
		h, err := webhookHeaders(patch.Headers)
		if err != nil {
			return w, false, err
		}
		changed = changed || !sameHeaders(h, w.Headers)
		next.Headers = h
	}
	if patch.Active.Present {
		v, err := required("active", patch.Active)
		if err != nil {
			return w, false, err
		}
		changed = changed || v != w.Active
		next = next.setActive(v, now)
	}
	if !changed {
		return w, false, nil
	}
	next.UpdatedAt = Timestamp(now)
	return next, true, nil
}

// RotateSecret returns the webhook with a fresh signing secret. The next
// attempt of every delivery is signed with it and, for grace (from
// PreviousSecretGrace) after now, also with the secret it replaces; a zero
// grace drops the old secret at once, as does any earlier grace still
// running (only the secret just replaced is kept).
func (w Webhook) RotateSecret(now time.Time, grace time.Duration) Webhook {
	now = Timestamp(now)
	w.PreviousSecret, w.PreviousSecretExpiresAt = "", nil
	if grace > 0 {
		until := now.Add(grace)
		w.PreviousSecret, w.PreviousSecretExpiresAt = w.Secret, &until
	}
	w.Secret = NewWebhookSecret()
	w.UpdatedAt = now
	return w
}

// SigningSecrets are the secrets that sign an attempt made at now: the
// current one first, then the previous one while its grace lasts.
func (w Webhook) SigningSecrets(now time.Time) []string {
	return SigningSecrets(w.Secret, w.PreviousSecret, w.PreviousSecretExpiresAt, now)
}

// SigningSecrets is Webhook.SigningSecrets for callers holding only the
// secret columns (the dispatcher reads them with a claimed delivery).
func SigningSecrets(current, previous string, previousExpiresAt *time.Time, now time.Time) []string {
	if previous != "" && previousExpiresAt != nil && now.Before(*previousExpiresAt) {
		return []string{current, previous}
	}
	return []string{current}
}

func sameEvents(a, b []EventType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
