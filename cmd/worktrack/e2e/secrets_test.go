package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

func newSecretsKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// signedReceiver records deliveries and verifies each with the Standard
// Webhooks Go library against the secret the test holds.
type signedReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	secret   string
	verified map[string]bool // task id -> a delivery verified
	failures []string
}

func newSignedReceiver(t *testing.T) *signedReceiver {
	t.Helper()
	r := &signedReceiver{verified: map[string]bool{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(r.secret)
		if err == nil {
			err = wh.Verify(body, req.Header)
		}
		var ev struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		if err != nil {
			r.failures = append(r.failures, ev.Data.ID+": "+err.Error())
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.verified[ev.Data.ID] = true
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *signedReceiver) expect(t *testing.T, p *proctest.Server, base, key, project string) {
	t.Helper()
	task := post(t, base+"/v1/projects/"+project+"/tasks", key, map[string]any{"title": "signed"})["id"].(string)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		ok, failures := r.verified[task], append([]string(nil), r.failures...)
		r.mu.Unlock()
		if len(failures) > 0 {
			t.Fatalf("a delivery did not verify under standardwebhooks: %v", failures)
		}
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("task %s was not delivered:\n%s", task, p.Stderr)
}

// With WORKTRACK_SECRETS_KEY set, no stored copy of a webhook secret is
// plaintext (idempotency replays included); keys rotate by prepending a new
// one, `secrets reencrypt`, then dropping the old one, and every delivery
// verifies under standardwebhooks throughout; a server without the key a
// secret was sealed with refuses to start, in one line.
func TestWebhookSecretsAtRestRotate(t *testing.T) {
	bin := buildBinary(t)
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			dir := t.TempDir()
			dbURL := "sqlite:" + filepath.Join(dir, "w.db")
			if dialect == "postgres" {
				dbURL = storetest.PostgresURL(t)
			}
			rotateSecrets(t, bin, dir, dbURL)
		})
	}
}

func rotateSecrets(t *testing.T, bin, dir, dbURL string) {
	old, next := newSecretsKey(t), newSecretsKey(t)
	base := []string{"DATABASE_URL=" + dbURL, "WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true", "WORKTRACK_WEBHOOK_BACKOFF_BASE=100ms"}
	env := func(keys string) []string { return append(append([]string{}, base...), "WORKTRACK_SECRETS_KEY="+keys) }
	rc := newSignedReceiver(t)

	p := proctest.Serve(t, bin, dir, env(old)...)
	key := proctest.SecretRe.FindString(p.Stderr.String())
	if key == "" || strings.Contains(p.Stderr.String(), "stored in plaintext") {
		t.Fatalf("first start:\n%s", p.Stderr)
	}
	hook := postIdempotent(t, p.Base+"/v1/webhooks", key, "hook-1",
		map[string]any{"url": rc.URL, "events": []string{"task.created"}})
	rc.mu.Lock()
	rc.secret = hook["secret"].(string)
	rc.mu.Unlock()
	project := post(t, p.Base+"/v1/projects", key, map[string]any{"name": "Signed", "key": "SIG"})["id"].(string)
	rc.expect(t, p, p.Base, key, project)
	noPlaintext(t, dbURL, rc.secret)

	// Prepend a new key; the old one still opens what it sealed.
	p.Stop(t)
	p = proctest.Serve(t, bin, dir, env(next+","+old)...)
	rc.expect(t, p, p.Base, key, project)
	rep := cli(t, bin, dir, env(next+","+old), "secrets", "reencrypt")
	if rep["webhooks"] != 1.0 || rep["replays"] != 1.0 || rep["rewritten"] != 2.0 {
		t.Fatalf("reencrypt: %v", rep)
	}
	if again := cli(t, bin, dir, env(next+","+old), "secrets", "reencrypt"); again["rewritten"] != 0.0 {
		t.Fatalf("reencrypt is idempotent: %v", again)
	}
	rc.expect(t, p, p.Base, key, project)

	// Drop the old key: everything still opens, the replay included.
	p.Stop(t)
	p = proctest.Serve(t, bin, dir, env(next)...)
	rc.expect(t, p, p.Base, key, project)
	replay := postIdempotent(t, p.Base+"/v1/webhooks", key, "hook-1",
		map[string]any{"url": rc.URL, "events": []string{"task.created"}})
	if replay["secret"] != rc.secret {
		t.Fatalf("the replay shows %v, want the first answer's secret", replay["secret"])
	}
	noPlaintext(t, dbURL, rc.secret)
	p.Stop(t)

	// Without a key that opens them, the server refuses to start.
	for _, keys := range []string{old, ""} {
		stderr, code := serveOnce(t, bin, dir, env(keys))
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code == 0 || !strings.Contains(lines[len(lines)-1], "WORKTRACK_SECRETS_KEY") || strings.Contains(stderr, "listening") {
			t.Fatalf("keys %q: want a refusal naming WORKTRACK_SECRETS_KEY, got %d:\n%s", keys, code, stderr)
		}
	}
}

// postIdempotent POSTs with an Idempotency-Key and returns the answer (201,
// first or replayed).
func postIdempotent(t *testing.T, url, key, idem string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idem)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: %d %v", url, res.StatusCode, out)
	}
	return out
}

// noPlaintext reads the raw rows, past the store's sealing, and fails if a
// webhook secret or an idempotency replay holds secret in plaintext.
func noPlaintext(t *testing.T, dbURL, secret string) {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL) // no keyring: the rows as stored
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows []struct {
		Secret   string
		Previous *string
	}
	if err := db.Gorm().Raw("SELECT secret, previous_secret AS previous FROM webhooks").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	var bodies [][]byte
	if err := db.Gorm().Raw("SELECT response_body FROM idempotency_keys").Scan(&bodies).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || len(bodies) != 1 {
		t.Fatalf("want 1 webhook and 1 replay, got %d and %d", len(rows), len(bodies))
	}
	for _, r := range rows {
		if !strings.HasPrefix(r.Secret, "wtksealed:v1:") || strings.Contains(r.Secret, "whsec_") ||
			(r.Previous != nil && !strings.HasPrefix(*r.Previous, "wtksealed:v1:")) {
			t.Fatalf("a stored webhook secret is not sealed: %+v", r)
		}
	}
	for _, b := range bodies {
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("whsec_")) || !bytes.HasPrefix(b, []byte("wtksealed:v1:")) {
			t.Fatalf("an idempotency replay holds the secret: %.80s", b)
		}
	}
}

// serveOnce runs serve expecting it to exit, and returns its stderr and
// exit code.
func serveOnce(t *testing.T, bin, dir string, env []string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), append([]string{"WORKTRACK_ADDR=127.0.0.1:0", "REDIS_URL="}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run()
	return stderr.String(), cmd.ProcessState.ExitCode()
}
