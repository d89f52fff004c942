package domain_test

import (
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
