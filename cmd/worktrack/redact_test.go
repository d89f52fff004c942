package main

import (
	"strings"
	"testing"
)

// The database URL serve logs never shows a password: neither the
// user-info's nor a password query parameter's.
func TestRedactURLHidesEveryPassword(t *testing.T) {
	for _, raw := range []string{
		"postgres://worktrack:hunter2@db:5432/worktrack?sslmode=disable",
		"postgres://worktrack@db:5432/worktrack?sslmode=disable&password=hunter2",
		"postgresql://db/worktrack?PASSWORD=hunter2&user=worktrack",
		"postgres://worktrack:hunter2@db/worktrack?password=hunter2",
		"postgres://%zz:hunter2@db/x",
	} {
		got := redactURL(raw)
		if strings.Contains(got, "hunter2") {
			t.Errorf("%s is logged as %s", raw, got)
		}
	}
	if got := redactURL("sqlite:worktrack.db"); got != "sqlite:worktrack.db" {
		t.Errorf("a URL without a password changed: %s", got)
	}
	if got := redactURL("postgres://worktrack@db/worktrack?sslmode=disable"); !strings.Contains(got, "worktrack@db/worktrack") {
		t.Errorf("the rest of the URL is lost: %s", got)
	}
}
