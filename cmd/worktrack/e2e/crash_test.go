package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

func post(t *testing.T, url, key string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
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

// A serve process killed (SIGKILL) while deliveries are pending, some of
// them in flight, loses none: a new process on the same database delivers
// every event at least once, once the dead process's leases lapse.
func TestKilledServerLosesNoDelivery(t *testing.T) {
	url := storetest.PostgresURL(t)
	bin := buildBinary(t)

	// The receiver is down (slow, then 503) until the first server is dead.
	var (
		mu        sync.Mutex
		up        bool
		attempts  int
		delivered = map[string]bool{}
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		attempts++
		ok := up
		mu.Unlock()
		if !ok {
			time.Sleep(300 * time.Millisecond)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		delivered[r.Header.Get("X-service-Event-Id")] = true
		mu.Unlock()
	}))
	defer rc.Close()

	env := []string{
		"DATABASE_URL=" + url,
		"WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true",
		"WORKTRACK_WEBHOOK_TIMEOUT=1s",
		"WORKTRACK_WEBHOOK_BACKOFF_BASE=100ms",
		"WORKTRACK_WEBHOOK_BACKOFF_MAX=400ms",
		"WORKTRACK_WEBHOOK_RETRY_WINDOW=5m",
	}
	first := proctest.Serve(t, bin, t.TempDir(), env...)
	key := proctest.SecretRe.FindString(first.Stderr.String())
	if key == "" {
		t.Fatalf("no bootstrap key:\n%s", first.Stderr.String())
	}
	post(t, first.Base+"/v1/webhooks", key, map[string]any{"url": rc.URL + "/hook", "events": []string{"task.created", "project.created"}})
	prj := post(t, first.Base+"/v1/projects", key, map[string]any{"name": "Crash", "key": "CRASH"})
	const tasks = 40
	for i := range tasks {
		post(t, first.Base+"/v1/projects/"+prj["id"].(string)+"/tasks", key, map[string]any{"title": fmt.Sprintf("Task %d", i)})
	}
	// Let the first server get attempts in flight, then kill it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := attempts
		mu.Unlock()
		if n >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first server made %d attempts:\n%s", n, first.Stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	first.Kill(t)

	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(where string) int64 {
		var n int64
		if err := db.Gorm().Table("webhook_deliveries").Where(where).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	if p, leased := count("status = 'pending'"), count("locked_by IS NOT NULL"); p != tasks+1 || leased == 0 {
		t.Fatalf("after the kill: %d pending deliveries (want %d), %d leased (want some in flight)", p, tasks+1, leased)
	}

	mu.Lock()
	up = true
	mu.Unlock()
	second := proctest.Serve(t, bin, t.TempDir(), env...)
	if proctest.SecretRe.MatchString(second.Stderr.String()) {
		t.Fatal("the second server bootstrapped again")
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(delivered)
		mu.Unlock()
		if n == tasks+1 && count("status = 'succeeded'") == tasks+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered after the restart:\n%s", n, tasks+1, second.Stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := second.Stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM: %d\n%s", code, second.Stderr.String())
	}
}

// serve's start-up log never shows the database's password, whether in
// the URL's user-info or in a password parameter.
func TestStartupLogHidesTheDatabasePassword(t *testing.T) {
	bin := buildBinary(t)
	dbURL := storetest.PostgresURL(t)
	// A role of the test's own with a password nothing else contains, so
	// that the check means something whether the server checks passwords
	// (a testcontainers PostgreSQL) or trusts every local client.
	password := "pw-" + strings.ToLower(rand.Text())
	role := "redact_" + strings.ToLower(rand.Text())[:12]
	admin, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), fmt.Sprintf("CREATE ROLE %s LOGIN SUPERUSER PASSWORD '%s'", role, password)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dbURL)
		if err == nil {
			_, err = conn.Exec(context.Background(), "DROP ROLE "+role)
			conn.Close(context.Background())
		}
		if err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	q := u.Query()
	q.Set("password", password) // the same, as a parameter
	u.RawQuery = q.Encode()
	p := proctest.Serve(t, bin, t.TempDir(), "DATABASE_URL="+u.String())
	p.Stop(t)
	out := p.Stderr.String()
	if strings.Contains(out, password) || !strings.Contains(out, `"database":"`) {
		t.Fatalf("the start-up log shows the password, or no database:\n%s", out)
	}
}
