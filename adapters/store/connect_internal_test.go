package store

import (
	"testing"
	"time"
)

// Without connect_timeout in the URL, connecting gives up after
// ConnectTimeout; the URL's own value wins.
func TestPostgresConnectTimeoutDefault(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want time.Duration
	}{
		{"postgres://u@127.0.0.1:5432/db?sslmode=disable", ConnectTimeout},
		{"postgres://u@127.0.0.1:5432/db?sslmode=disable&connect_timeout=2", 2 * time.Second},
	} {
		cfg, err := postgresConfig(tc.url, &options{})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ConnectTimeout != tc.want {
			t.Errorf("%s: connect timeout %v, want %v", tc.url, cfg.ConnectTimeout, tc.want)
		}
	}
}
