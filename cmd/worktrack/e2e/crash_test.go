package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// buildBinary builds cmd/worktrack into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "worktrack")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/worktrack/worktrack/cmd/worktrack").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// server is a `worktrack serve` child process this test started.
type server struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	base   string
	exited chan struct{}
}

var (
	listenRe = regexp.MustCompile(`Worktrack is listening on (http://[0-9.:]+)`)
	secretRe = regexp.MustCompile(`wtk_[0-9A-Za-z]{32,}`)
)

// serve starts `worktrack serve` with env and waits until it listens. The
// process is killed, by its pid, when the test ends if still running.
func serve(t *testing.T, bin string, env ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), append([]string{"WORKTRACK_ADDR=127.0.0.1:0", "REDIS_URL="}, env...)...)
	s := &server{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(s.stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.base = <-found:
	case <-s.exited:
		t.Fatalf("serve exited:\n%s", s.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start:\n%s", s.stderr.String())
	}
	return s
}

// kill sends SIGKILL: no shutdown, leases left behind.
func (s *server) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.exited
}

// stop sends SIGTERM and returns the exit code.
func (s *server) stop(t *testing.T) int {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
	return s.cmd.ProcessState.ExitCode()
}

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
	first := serve(t, bin, env...)
	key := secretRe.FindString(first.stderr.String())
	if key == "" {
		t.Fatalf("no bootstrap key:\n%s", first.stderr.String())
	}
	post(t, first.base+"/v1/webhooks", key, map[string]any{"url": rc.URL + "/hook", "events": []string{"task.created", "project.created"}})
	prj := post(t, first.base+"/v1/projects", key, map[string]any{"name": "Crash", "key": "CRASH"})
	const tasks = 40
	for i := range tasks {
		post(t, first.base+"/v1/projects/"+prj["id"].(string)+"/tasks", key, map[string]any{"title": fmt.Sprintf("Task %d", i)})
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
			t.Fatalf("the first server made %d attempts:\n%s", n, first.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	first.kill(t)

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
	second := serve(t, bin, env...)
	if secretRe.MatchString(second.stderr.String()) {
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
			t.Fatalf("%d of %d events delivered after the restart:\n%s", n, tasks+1, second.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := second.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM: %d\n%s", code, second.stderr.String())
	}
}
