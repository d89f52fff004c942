package httpedge

import (
	"slices"
	"testing"
)

// WORKTRACK_CORS_ORIGINS takes exact origins or * alone; anything else is
// refused with the entry at fault.
func TestParseCORSOrigins(t *testing.T) {
	for in, want := range map[string][]string{
		"":                      nil,
		" , ":                   nil,
		"*":                     {"*"},
		"http://localhost:5173": {"http://localhost:5173"},
		"HTTPS://Board.Example.com, http://127.0.0.1:9097 ": {"https://board.example.com", "http://127.0.0.1:9097"},
		"http://[::1]:5173": {"http://[::1]:5173"},
	} {
		got, err := ParseCORSOrigins(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{
		"localhost:5173", "http://localhost:5173/", "http://localhost:5173/app", "ftp://example.com",
		"https://*.example.com", "*,http://localhost:5173", "http://user@example.com", "http://example.com?x", "http://",
	} {
		if got, err := ParseCORSOrigins(bad); err == nil {
			t.Errorf("%q accepted as %v", bad, got)
		}
	}
}
