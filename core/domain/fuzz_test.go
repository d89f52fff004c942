package domain_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/worktrack/worktrack/core/domain"
)

// FuzzDecodeCursor: no cursor, however forged, panics the decoder or yields
// a position a store cannot compare with (an id that is not one, an instant
// outside years 0001-9999); what it accepts re-encodes to itself.
func FuzzDecodeCursor(f *testing.F) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 123456000, time.UTC)
	f.Add("projects:wsp_a", domain.EncodeCursor("projects:wsp_a", domain.Position{At: at, ID: "prj_abc"}))
	f.Add("projects:wsp_a", domain.EncodeCursor("projects:wsp_a", domain.Position{At: at, ID: "prj_\x00"}))
	f.Add("projects:wsp_a", domain.EncodeCursor("projects:wsp_a", domain.Position{At: time.UnixMicro(-1 << 62), ID: "prj_a"}))
	f.Add("tasks:x", domain.EncodeCursor("projects:wsp_a", domain.Position{At: at, ID: "prj_abc"}))
	f.Add("x", "")
	f.Add("x", "AAAA\x00")
	f.Add("x", strings.Repeat("_-", 40))
	f.Fuzz(func(t *testing.T, scope, s string) {
		pos, err := domain.DecodeCursor("cursor", scope, s)
		if err != nil {
			if !domain.IsCode(err, domain.CodeValidationFailed) {
				t.Fatalf("error %v is not validation_failed", err)
			}
			return
		}
		if !domain.IsAnyID(pos.ID) || !domain.InTimeRange(pos.At) {
			t.Fatalf("accepted an unusable position %q %v", pos.ID, pos.At)
		}
		again, err := domain.DecodeCursor("cursor", scope, domain.EncodeCursor(scope, pos))
		if err != nil || again.ID != pos.ID || !again.At.Equal(pos.At) {
			t.Fatalf("round trip: %v %v vs %v", err, again, pos)
		}
	})
}

// FuzzIDsAndSecrets: whatever IsID, IsAnyID or WellFormedSecret accepts is
// printable ASCII, so it can reach either database.
func FuzzIDsAndSecrets(f *testing.F) {
	for _, s := range []string{"tsk_abc", "tsk_\x00", "tsk_\xff", "tsk_", "_abc", "TSK_abc", "wk_sec_", "wk_" + strings.Repeat("a", 40), "tsk_é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ascii := func() {
			for i := 0; i < len(s); i++ {
				if s[i] < 0x21 || s[i] > 0x7e {
					t.Fatalf("accepted %q", s)
				}
			}
		}
		if domain.IsID(s, domain.PrefixTask) {
			ascii()
			if !domain.IsAnyID(s) || len(s) > len("tsk_")+64 {
				t.Fatalf("IsID and IsAnyID disagree on %q", s)
			}
		}
		if domain.IsAnyID(s) {
			ascii()
		}
		if domain.WellFormedSecret(s) {
			ascii()
		}
		if !utf8.ValidString(s) && (domain.IsAnyID(s) || domain.WellFormedSecret(s)) {
			t.Fatalf("accepted invalid UTF-8 %q", s)
		}
	})
}

// FuzzCheckTime: an instant CheckTime accepts is in years 0001-9999 in UTC
// and survives the wire format and RFC 3339 parsing unchanged; one it
// refuses is validation_failed on the param.
func FuzzCheckTime(f *testing.F) {
	f.Add("0001-01-01T00:00:00Z")
	f.Add("0000-01-01T00:00:00Z")
	f.Add("0001-01-01T00:00:00+01:00")
	f.Add("9999-12-31T23:00:00-01:00")
	f.Add("9999-12-31T23:59:59.999999999Z")
	f.Add("2026-01-02T15:04:05.1234567+05:30")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return
		}
		if err := domain.CheckTime("due_at", v); err != nil {
			if e, ok := domain.AsError(err); !ok || e.Param != "due_at" || e.Code != domain.CodeValidationFailed {
				t.Fatalf("refusal %v", err)
			}
			if domain.InTimeRange(v) {
				t.Fatalf("CheckTime and InTimeRange disagree on %s", s)
			}
			return
		}
		u := domain.Timestamp(v)
		if y := u.Year(); y < 1 || y > 9999 {
			t.Fatalf("accepted year %d from %s", y, s)
		}
		back, err := time.Parse(time.RFC3339Nano, domain.FormatTime(v))
		if err != nil || !back.Equal(u) {
			t.Fatalf("wire round trip of %s: %v %v", s, back, err)
		}
	})
}
