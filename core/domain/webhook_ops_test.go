package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// A span disables its webhook at DisableAfter exactly, with 10 failed
// attempts at least, only while the webhook is active and failing.
func TestFailureSpanDisables(t *testing.T) {
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	after := domain.DefaultDisableAfter
	for _, c := range []struct {
		name string
		span domain.FailureSpan
		at   time.Time
		want bool
	}{
		{"at the limit with 10 failures", domain.FailureSpan{Active: true, FailingSince: &start, FailedAttempts: 10}, start.Add(after), true},
		{"a moment before the limit", domain.FailureSpan{Active: true, FailingSince: &start, FailedAttempts: 50}, start.Add(after - time.Microsecond), false},
		{"9 failures", domain.FailureSpan{Active: true, FailingSince: &start, FailedAttempts: 9}, start.Add(2 * after), false},
		{"no span (the last attempt succeeded)", domain.FailureSpan{Active: true, FailedAttempts: 0}, start.Add(2 * after), false},
		{"already inactive", domain.FailureSpan{Active: false, FailingSince: &start, FailedAttempts: 20}, start.Add(2 * after), false},
	} {
		if got := c.span.Disables(c.at, after); got != c.want {
			t.Errorf("%s: Disables = %v, want %v", c.name, got, c.want)
		}
	}
}

// Disabling ends the span and records why and when, once; enabling again
// clears the reason.
func TestDisableAndEnableAgain(t *testing.T) {
	now := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	since := now.Add(-80 * time.Hour)
	w := domain.Webhook{Active: true, FailingSince: &since, FailedAttempts: 30}
	off, changed := w.Disable(domain.DisabledFailing, now)
	if !changed || off.Active || off.DisabledReason != domain.DisabledFailing || !off.DisabledAt.Equal(now) ||
		off.FailingSince != nil || off.FailedAttempts != 0 {
		t.Fatalf("disabled: %+v", off)
	}
	if again, changed := off.Disable(domain.DisabledGone, now.Add(time.Hour)); changed || again.DisabledReason != domain.DisabledFailing {
		t.Fatalf("a second disable changed it: %+v", again)
	}
	back, changed, err := off.Apply(domain.WebhookFields{Active: domain.Field[bool]{Present: true, Value: true}}, now.Add(time.Hour))
	if err != nil || !changed || !back.Active || back.DisabledReason != "" || back.DisabledAt != nil {
		t.Fatalf("enabled again: %+v %v", back, err)
	}
}

// A webhook's custom headers: names the service sets are refused however
// they are spelled, "_" read as "-" (receivers' frameworks read them
// alike), and so are the headers that change how the body is sent or read.
func TestWebhookHeaderNames(t *testing.T) {
	for _, name := range []string{
		"Content-Type", "content_type", "Content_Type", "User-Agent", "user_agent", "Host",
		"webhook-signature", "webhook_signature", "Webhook_Id", "X-service-Signature", "X_service_Signature",
		"x_SERVICE_event", "Transfer-Encoding", "transfer_encoding", "Connection", "Expect", "Content-Encoding",
		"content_encoding", "Accept-Encoding",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := domain.ParseWebhookHeaders(map[string]string{name: "x"}); !domain.IsCode(err, domain.CodeValidationFailed) {
				t.Fatalf("%s accepted (%v), but the service sets it", name, err)
			}
		})
	}
	// The same name twice, spelled two ways, is given twice.
	if _, err := domain.ParseWebhookHeaders(map[string]string{"X-Gateway-Token": "a", "x_gateway_token": "b"}); !domain.IsCode(err, domain.CodeValidationFailed) {
		t.Fatalf("X-Gateway-Token and x_gateway_token both accepted: %v", err)
	}
	got, err := domain.ParseWebhookHeaders(map[string]string{"Authorization": "Bearer t", "X_Gateway_Token": "a", "X-Tenant": "acme"})
	if err != nil || len(got) != 3 || got["X_Gateway_Token"] != "a" {
		t.Fatalf("ordinary headers refused or changed: %v, %v", got, err)
	}
}

// A null header value (JSON's null, as an API decoded it) is refused with
// param headers, the first by name named; "" is a value.
func TestWebhookHeaderValues(t *testing.T) {
	v, empty := "v", ""
	_, err := domain.WebhookHeaderValues(map[string]*string{"X-Ok": &v, "X-Null": nil, "Y-Null": nil})
	e, ok := domain.AsError(err)
	if !ok || e.Code != domain.CodeValidationFailed || e.Param != "headers" || !strings.Contains(e.Message, "the value of X-Null is null") {
		t.Fatalf("a null value: %v", err)
	}
	got, err := domain.WebhookHeaderValues(map[string]*string{"X-Ok": &v, "X-Empty": &empty})
	if err != nil || len(got) != 2 || got["X-Ok"] != "v" || got["X-Empty"] != "" {
		t.Fatalf("string values: %v, %v", got, err)
	}
}
