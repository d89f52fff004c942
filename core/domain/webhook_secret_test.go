package domain_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// A secret is whsec_ and exactly 32 base62 characters, which Standard
// Webhooks libraries decode as standard base64; the 40-character secrets
// made before decode too, so that they keep working.
func TestWebhookSecretIsStandardBase64(t *testing.T) {
	for range 50 {
		s := domain.NewWebhookSecret()
		body, ok := strings.CutPrefix(s, domain.WebhookSecretPrefix)
		if !ok || len(body) != 32 || !domain.IsBase62(body) {
			t.Fatalf("secret %q", s)
		}
		if key, err := base64.StdEncoding.DecodeString(body); err != nil || len(key) != 24 {
			t.Fatalf("secret %q does not decode as standard base64: %v", s, err)
		}
	}
	legacy := domain.RandomBase62(40)
	if key, err := base64.StdEncoding.DecodeString(legacy); err != nil || len(key) != 30 {
		t.Fatalf("a 40-character secret %q does not decode: %v", legacy, err)
	}
}

// previous_secret_expires_in: absent is 0, 0 to 604800 whole seconds pass,
// anything else (null included) is validation_failed with the given param.
func TestPreviousSecretGrace(t *testing.T) {
	for _, tc := range []struct {
		in   domain.Field[int64]
		want time.Duration
	}{
		{domain.Field[int64]{}, 0},
		{domain.Set[int64](0), 0},
		{domain.Set[int64](1), time.Second},
		{domain.Set[int64](604800), 7 * 24 * time.Hour},
	} {
		if got, err := domain.PreviousSecretGrace("p", tc.in); err != nil || got != tc.want {
			t.Errorf("%+v: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []domain.Field[int64]{domain.Set[int64](-1), domain.Set[int64](604801), domain.Null[int64]()} {
		_, err := domain.PreviousSecretGrace("p", in)
		if e, ok := domain.AsError(err); !ok || e.Code != domain.CodeValidationFailed || e.Param != "p" {
			t.Errorf("%+v: %v; want validation_failed on p", in, err)
		}
	}
}

// A rotation with grace keeps the replaced secret signing until the grace
// ends, after the new one; a rotation without drops it, and so does a
// second rotation (only the secret just replaced is kept).
func TestRotateSecretGrace(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	w := domain.Webhook{ID: "whk_1", Secret: domain.NewWebhookSecret()}
	r := w.RotateSecret(now, time.Minute)
	if r.Secret == w.Secret || r.PreviousSecret != w.Secret || r.PreviousSecretExpiresAt == nil || !r.PreviousSecretExpiresAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("rotated with grace: %+v", r)
	}
	if got := r.SigningSecrets(now.Add(59 * time.Second)); len(got) != 2 || got[0] != r.Secret || got[1] != w.Secret {
		t.Fatalf("during the grace: %v", got)
	}
	if got := r.SigningSecrets(now.Add(time.Minute)); len(got) != 1 || got[0] != r.Secret {
		t.Fatalf("when the grace ends: %v", got)
	}
	r2 := r.RotateSecret(now.Add(time.Second), time.Minute)
	if r2.PreviousSecret != r.Secret {
		t.Fatalf("a second rotation keeps %q, want the secret it replaced", r2.PreviousSecret)
	}
	r3 := r2.RotateSecret(now.Add(2*time.Second), 0)
	if r3.PreviousSecret != "" || r3.PreviousSecretExpiresAt != nil || len(r3.SigningSecrets(now)) != 1 {
		t.Fatalf("rotated without grace: %+v", r3)
	}
}
