package main

import (
	"bytes"
	"encoding/json"

	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/tools/nodetest"
)

// dashboard is the example board page of tools/dashboard with the
// Playwright driver that tests it, installed and built by make dashboard.
var dashboard = nodetest.Tool{
	Dir:        filepath.Join("..", "..", "tools", "dashboard"),
	Package:    "playwright-core",
	Install:    "make dashboard",
	RequireEnv: "WORKTRACK_REQUIRE_DASHBOARD",
}

// The example dashboard, served from an origin of its own, works against
// the real server in Debian's Chromium (docs/graphql.md#a-dashboard-in-the-browser):
// with WORKTRACK_CORS_ORIGINS naming its origin it lists a project's tasks
// by status (urql's queries over GET), a task created over REST appears
// within a second (graphql-ws), and a move made in the page (a mutation
// over POST) reaches GET /v1/tasks/{id}. On both databases.
func TestDashboardInChromium(t *testing.T) {
	node := dashboard.Require(t)
	dist := filepath.Join(dashboard.Dir, "dist")
	if _, err := os.Stat(filepath.Join(dist, "board.js")); err != nil {
		msg := "the board page is not built in tools/dashboard/dist (npm ci from its lockfile, then esbuild). To run these tests: make dashboard."
		if os.Getenv(dashboard.RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + " Skipping.")
	}
	const chromium = "/usr/bin/chromium"
	if _, err := exec.LookPath(chromium); err != nil {
		if os.Getenv("WORKTRACK_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("%s is missing (Debian's chromium package): %v", chromium, err)
		}
		t.Skipf("%s is missing. To run these tests: apt-get install chromium.", chromium)
	}
	page := httptest.NewServer(http.FileServer(http.Dir(dist)))
	t.Cleanup(page.Close)

	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			url := "sqlite:" + filepath.Join(t.TempDir(), "board.db")
			if kind == "postgres" {
				url = storetest.PostgresURL(t)
			}
			p := startServe(t, t.TempDir(), "DATABASE_URL="+url, "WORKTRACK_CORS_ORIGINS="+page.URL)
			key := secretRe.FindString(p.Stderr.String())
			project := sendJSON(t, p.Base, key, "/v1/projects", map[string]any{"name": "Board", "key": "BOARD"})["id"].(string)
			seeded := []string{"Write the brief", "Draw the board", "Ship the page"}
			for _, title := range seeded {
				sendJSON(t, p.Base, key, "/v1/projects/"+project+"/tasks", map[string]any{"title": title})
			}
			titles, _ := json.Marshal(seeded)

			cmd := exec.Command(node, "e2e.mjs")
			cmd.Dir = dashboard.Dir
			cmd.Env = append(os.Environ(),
				"DASHBOARD_URL="+page.URL, "API_URL="+p.Base, "API_KEY="+key, "PROJECT_ID="+project,
				"SEEDED="+string(titles), "CHROMIUM="+chromium, "SCREENSHOT="+filepath.Join(t.TempDir(), "board.png"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("the dashboard in Chromium: %v\n%s%s\nserver log:\n%s", err, stdout.String(), stderr.String(), p.Stderr.String())
			}
			t.Logf("%s in %v", bytes.TrimSpace(stdout.Bytes()), time.Since(start).Round(time.Millisecond))
			if code := p.Stop(t); code != 0 {
				t.Fatalf("exit code after SIGTERM: %d", code)
			}
		})
	}
}

// sendJSON POSTs body to base+path with key and returns the decoded 201
// answer.
func sendJSON(t *testing.T, base, key, path string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: %d %v %v", path, res.StatusCode, out, err)
	}
	return out
}
