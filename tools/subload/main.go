// Command subload measures GraphQL subscriptions under load against the real
// worktrack binary on PostgreSQL (make load, scenario "subscriptions"): it
// opens 1,000 idle subscriptions on one process (one socket each, as 1,000
// dashboards would, 100 per project over 10 projects), reports the memory
// they add, then creates tasks at a steady rate and reports how long each
// event takes from its creation to each subscriber (p50, p99), and whether
// every subscriber received every event of its project exactly once.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"

	wt "github.com/worktrack/worktrack/client"
)

var (
	flagAdminURL = flag.String("db", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		"PostgreSQL URL used to create and drop the scratch database (never dropped itself)")
	flagScratch  = flag.String("scratch", "worktrack_subload", "name of the scratch database, dropped and created")
	flagBin      = flag.String("bin", "", "worktrack binary; default: go build ./cmd/worktrack into a temporary directory")
	flagSubs     = flag.Int("subscriptions", 1000, "idle subscriptions, one socket each")
	flagProjects = flag.Int("projects", 10, "projects; each subscription follows one")
	flagRate     = flag.Int("rate", 100, "tasks created per second during the writes")
	flagDuration = flag.Duration("duration", 15*time.Second, "how long the writes last (LOAD_QUICK=1: 2s)")
	flagHeap     = flag.String("heap", "", "save the server's heap profile (pprof) with the subscriptions idle to this file")
)

const perKey = 20 // subscriptions (each its own socket) one key, and one user, may hold

func main() {
	flag.Parse()
	quick := os.Getenv("LOAD_QUICK") == "1"
	if quick {
		*flagDuration = 2 * time.Second
	}
	ctx := context.Background()
	bin := *flagBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "subload")
		must(err)
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "worktrack")
		out, err := exec.Command("go", "build", "-o", bin, "./cmd/worktrack").CombinedOutput()
		if err != nil {
			fail("go build ./cmd/worktrack (run from the repository root): %v\n%s", err, out)
		}
	}
	dbURL := freshDatabase(ctx)
	keys := provision(bin, dbURL, (*flagSubs+perKey-1)/perKey)
	srv := startServer(bin, dbURL)
	defer srv.stop()
	api := &client{base: srv.base, key: keys[0]}
	projects := make([]string, *flagProjects)
	for i := range projects {
		projects[i] = api.post("/v1/projects", map[string]any{"name": fmt.Sprint("Dashboard ", i), "key": fmt.Sprintf("D%03d", i)})["id"].(string)
	}
	time.Sleep(time.Second) // let the process settle before measuring it
	before := rss(srv.cmd.Process.Pid)

	fmt.Fprintf(os.Stderr, "subload: opening %d subscriptions...\n", *flagSubs)
	subs := make([]*subscriber, *flagSubs)
	var opened sync.WaitGroup
	// Fewer openers than the server lets one address hold sockets that have
	// not been acknowledged yet (graph/server.MaxPendingSocketsPerAddress,
	// 20): every subscriber here dials from the same address.
	sem := make(chan struct{}, 16)
	for i := range subs {
		opened.Add(1)
		sem <- struct{}{}
		go func() {
			defer opened.Done()
			defer func() { <-sem }()
			subs[i] = subscribe(ctx, srv.base, keys[i/perKey], projects[i%len(projects)])
		}()
	}
	opened.Wait()
	waitForGauge(srv.base, *flagSubs)
	time.Sleep(2 * time.Second) // idle
	idle := rss(srv.cmd.Process.Pid)
	if *flagHeap != "" {
		saveHeap(srv.pprof, *flagHeap, "heap")
		saveHeap(srv.pprof, *flagHeap+".goroutines", "goroutine")
	}

	// The writes go through the Go client, as an integration's would: a
	// create refused for now (429: the workspace's share of the database,
	// which its own thousand subscriptions' loads also use; 503) is sent
	// again after Retry-After, with the same idempotency key.
	refused := &refusalCounter{rt: http.DefaultTransport}
	writer := wt.New(srv.base, keys[0], wt.WithHTTPClient(&http.Client{Transport: refused, Timeout: 30 * time.Second}), wt.WithMaxRetries(8))
	fmt.Fprintf(os.Stderr, "subload: creating %d tasks a second for %s...\n", *flagRate, *flagDuration)
	created := map[string]int{} // per project
	var mu sync.Mutex
	var failed atomic.Int64
	tick := time.NewTicker(time.Second / time.Duration(*flagRate))
	stop := time.Now().Add(*flagDuration)
	peak := idle
	var writers sync.WaitGroup
	for n := 0; time.Now().Before(stop); n++ {
		<-tick.C
		prj := projects[n%len(projects)]
		writers.Add(1)
		go func() {
			defer writers.Done()
			if _, err := writer.Tasks.Create(ctx, prj, wt.TaskCreate{Title: fmt.Sprint("Task ", n)}); err != nil {
				if failed.Add(1) == 1 {
					fmt.Fprintf(os.Stderr, "subload: a create failed: %v\n", err)
				}
				return
			}
			mu.Lock()
			created[prj]++
			mu.Unlock()
		}()
		if n%(*flagRate/4+1) == 0 {
			peak = max(peak, rss(srv.cmd.Process.Pid))
		}
	}
	tick.Stop()
	writers.Wait()

	// Wait for every subscriber to have its project's events.
	want := 0
	for i, s := range subs {
		want += created[projects[i%len(projects)]]
		_ = s
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := 0
		for _, s := range subs {
			got += s.count()
		}
		if got >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	peak = max(peak, rss(srv.cmd.Process.Pid))

	var lat []time.Duration
	var received, duplicates, missing, errs, retries int
	for i, s := range subs {
		s.close()
		s.mu.Lock()
		lat = append(lat, s.latencies...)
		received += len(s.latencies)
		duplicates += s.duplicates
		retries += s.retries
		if s.err != nil {
			errs++
		}
		if n := created[projects[i%len(projects)]]; len(s.seen) < n {
			missing += n - len(s.seen)
		}
		s.mu.Unlock()
	}
	total := 0
	for _, n := range created {
		total += n
	}
	fmt.Println()
	fmt.Printf("subscriptions: %d idle on one process (PostgreSQL), one socket each, %d per project\n", *flagSubs, *flagSubs / *flagProjects)
	fmt.Printf("| measure | value | target |\n|---|---|---|\n")
	fmt.Printf("| subscribes refused for now (too_many_requests) and retried | %d | |\n", retries)
	fmt.Printf("| creates refused for now (429, 503) and retried by the client | %d | |\n", refused.n.Load())
	fmt.Printf("| RSS before the subscriptions | %.1f MB | |\n", mb(before))
	fmt.Printf("| RSS with %d idle subscriptions | %.1f MB (+%.1f MB) | <= +100 MB |\n", *flagSubs, mb(idle), mb(idle-before))
	fmt.Printf("| peak RSS during the writes | %.1f MB (+%.1f MB) | |\n", mb(peak), mb(peak-before))
	fmt.Printf("| tasks created (%d/s for %s) | %d (%d failed) | |\n", *flagRate, *flagDuration, total, failed.Load())
	fmt.Printf("| events delivered to subscribers | %d of %d (%d missing, %d duplicates, %d subscriptions ended with an error) | all, once |\n",
		received, want, missing, duplicates, errs)
	fmt.Printf("| event to subscriber p50 | %s | |\n", percentile(lat, 0.50).Round(100*time.Microsecond))
	fmt.Printf("| event to subscriber p99 | %s | < 1s |\n", percentile(lat, 0.99).Round(100*time.Microsecond))
	fmt.Printf("| event to subscriber max | %s | |\n", percentile(lat, 1).Round(100*time.Microsecond))
	if missing > 0 || duplicates > 0 || errs > 0 || failed.Load() > 0 {
		fail("subscriptions lost, repeated or failed events (see the table)")
	}
}

// --- a subscriber ---

type subscriber struct {
	conn       *websocket.Conn
	cancel     context.CancelFunc
	done       chan struct{}
	mu         sync.Mutex
	seen       map[string]bool
	latencies  []time.Duration
	duplicates int
	retries    int // subscribes refused with too_many_requests and sent again
	err        error
}

func (s *subscriber) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.latencies)
}

func (s *subscriber) close() {
	s.cancel()
	_ = s.conn.Close(websocket.StatusNormalClosure, "")
	<-s.done
}

// subscribe opens a socket, authenticates and subscribes to the task.created
// events of one project, then reads them in the background.
func subscribe(ctx context.Context, base, key, project string) *subscriber {
	ctx, cancel := context.WithCancel(ctx)
	u := "ws" + strings.TrimPrefix(base, "http") + "/graphql"
	conn, res, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		fail("dial: %v", err)
	}
	if res.Body != nil {
		_ = res.Body.Close()
	}
	send := func(v any) {
		raw, _ := json.Marshal(v)
		if err := conn.Write(ctx, websocket.MessageText, raw); err != nil {
			fail("send: %v", err)
		}
	}
	send(map[string]any{"type": "connection_init", "payload": map[string]any{"authorization": "Bearer " + key}})
	// Wait for the ack, as a graphql-ws client does: until then the socket
	// counts against the address's sockets awaiting connection_init, and
	// openers that raced ahead of the server would exceed that cap.
	if _, data, err := conn.Read(ctx); err != nil || !strings.Contains(string(data), `"connection_ack"`) {
		fail("connection_init: %s %v", data, err)
	}
	attempt := 1
	start := func() {
		send(map[string]any{"id": strconv.Itoa(attempt), "type": "subscribe", "payload": map[string]any{
			"query":     "subscription($p: ID) { events(projectId: $p, types: [TASK_CREATED]) { id createdAt task { id title } } }",
			"variables": map[string]any{"p": project}}})
	}
	start()
	s := &subscriber{conn: conn, cancel: cancel, done: make(chan struct{}), seen: map[string]bool{}}
	go func() {
		defer close(s.done)
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				if ctx.Err() == nil && websocket.CloseStatus(err) != websocket.StatusNormalClosure {
					s.mu.Lock()
					s.err = err
					s.mu.Unlock()
				}
				return
			}
			at := time.Now()
			var m struct {
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(data, &m); err != nil {
				s.fail(err)
				return
			}
			switch m.Type {
			case "connection_ack", "pong":
			case "ping":
				send(map[string]any{"type": "pong"})
			case "error":
				// A subscribe refused for a limit that passes (the workspace's
				// share of the database, while a thousand dashboards open at
				// once) is retried after a backoff, as a graphql-ws client
				// with retries does; any other error ends the subscriber.
				if !refusedForNow(m.Payload) || attempt > maxSubscribeAttempts {
					s.fail(fmt.Errorf("subscribe: %s", data))
					return
				}
				s.mu.Lock()
				s.retries++
				s.mu.Unlock()
				time.Sleep(backoff(attempt))
				attempt++
				start()
			case "next":
				var p struct {
					Data struct {
						Events struct {
							ID        string    `json:"id"`
							CreatedAt time.Time `json:"createdAt"`
						} `json:"events"`
					} `json:"data"`
				}
				if err := json.Unmarshal(m.Payload, &p); err != nil {
					s.fail(err)
					return
				}
				s.mu.Lock()
				if s.seen[p.Data.Events.ID] {
					s.duplicates++
				}
				s.seen[p.Data.Events.ID] = true
				s.latencies = append(s.latencies, at.Sub(p.Data.Events.CreatedAt))
				s.mu.Unlock()
			default:
				s.fail(fmt.Errorf("unexpected %s", data))
				return
			}
		}
	}()
	return s
}

// refusalCounter counts the answers 429 and 503 that pass through it.
type refusalCounter struct {
	rt http.RoundTripper
	n  atomic.Int64
}

func (r *refusalCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := r.rt.RoundTrip(req)
	if err == nil && (res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable) {
		r.n.Add(1)
	}
	return res, err
}

// maxSubscribeAttempts bounds a subscriber's retries of a refused subscribe.
const maxSubscribeAttempts = 10

// refusedForNow says whether an error message's payload is a refusal that
// a later attempt may pass: too_many_requests.
func refusedForNow(payload json.RawMessage) bool {
	var errs []struct {
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	}
	return json.Unmarshal(payload, &errs) == nil && len(errs) > 0 && errs[0].Extensions.Code == "too_many_requests"
}

// backoff is the wait before a subscriber's next attempt: 100 ms doubled
// at each attempt up to 2 s, less up to half of it at random so that
// refused subscribers do not come back together.
func backoff(attempt int) time.Duration {
	d := min(100*time.Millisecond<<(attempt-1), 2*time.Second)
	return d - time.Duration(rand.Int64N(int64(d/2))) //nolint:gosec // jitter, not a secret
}

func (s *subscriber) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// --- measures ---

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// rss is the VmRSS of pid in kB.
func rss(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(err)
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			must(err)
			return kb
		}
	}
	fail("no VmRSS for pid %d", pid)
	return 0
}

func mb(kb int64) float64 { return float64(kb) / 1024 }

// waitForGauge waits until /metrics counts n subscriptions.
func waitForGauge(base string, n int) {
	want := fmt.Sprintf("worktrack_graphql_subscriptions %d\n", n)
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(base + "/metrics")
		must(err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(body), want) {
			return
		}
		if time.Now().After(deadline) {
			got := "no such metric"
			for _, line := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(line, "worktrack_graphql_subscriptions ") || strings.HasPrefix(line, "worktrack_refusals_total") {
					got += "; " + line
				}
			}
			fail("the server never counted %d subscriptions (%s)", n, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// --- the database and the server ---

func freshDatabase(ctx context.Context) string {
	conn, err := pgx.Connect(ctx, *flagAdminURL)
	must(err)
	defer conn.Close(ctx)
	name := pgx.Identifier{*flagScratch}.Sanitize()
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	must(err)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	must(err)
	u, err := url.Parse(*flagAdminURL)
	must(err)
	u.Path = "/" + *flagScratch
	return u.String()
}

// provision migrates and makes a workspace and n of its admins with a key
// each: a key, and a user over all its keys, holds at most perKey sockets,
// so the dashboards are many users' as they would be.
func provision(bin, dbURL string, n int) []string {
	cli := func(args ...string) map[string]any {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
		out, err := cmd.Output()
		if err != nil {
			fail("worktrack %s: %v", strings.Join(args, " "), err)
		}
		var m map[string]any
		if len(bytes.TrimSpace(out)) > 0 {
			must(json.Unmarshal(out, &m))
		}
		return m
	}
	cli("migrate")
	ws := cli("workspace", "create", "--name", "Dashboards")["id"].(string)
	keys := make([]string, n)
	for i := range keys {
		usr := cli("user", "create", "--workspace", ws, "--email", fmt.Sprintf("dash%d@example.com", i),
			"--name", fmt.Sprintf("Dash %d", i), "--role", "admin")["id"].(string)
		keys[i] = cli("key", "create", "--user", usr)["secret"].(string)
	}
	return keys
}

type server struct {
	cmd   *exec.Cmd
	base  string
	pprof string // the pprof listener's address
}

func saveHeap(addr, file, profile string) {
	res, err := http.Get("http://" + addr + "/debug/pprof/" + profile)
	must(err)
	defer res.Body.Close()
	out, err := os.Create(file)
	must(err)
	defer out.Close()
	_, err = io.Copy(out, res.Body)
	must(err)
	fmt.Fprintf(os.Stderr, "subload: %s profile in %s (go tool pprof -top %s)\n", profile, file, file)
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	defer ln.Close()
	return ln.Addr().String()
}

func startServer(bin, dbURL string) *server {
	addr, pprofAddr := freeAddr(), freeAddr()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "WORKTRACK_ADDR="+addr, "REDIS_URL=", "WORKTRACK_PPROF_ADDR="+pprofAddr,
		"WORKTRACK_RATE_LIMIT=100000000", "WORKTRACK_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	must(cmd.Start())
	s := &server{cmd: cmd, base: "http://" + addr, pprof: pprofAddr}
	running.Store(s)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if res, err := http.Get(s.base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			fail("server did not become ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
}

type client struct{ base, key string }

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 64}}

func (c *client) tryPost(path string, body any) (map[string]any, error) {
	raw, err := json.Marshal(body)
	must(err)
	req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(raw))
	must(err)
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return nil, fmt.Errorf("POST %s: %d %s", path, res.StatusCode, out)
	}
	var m map[string]any
	return m, json.Unmarshal(out, &m)
}

func (c *client) post(path string, body any) map[string]any {
	m, err := c.tryPost(path, body)
	must(err)
	return m
}

func must(err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		fail("%v", err)
	}
}

// running is the server started, which fail stops: exiting does not run
// main's deferred stop, and a server left behind would keep logging.
var running atomic.Pointer[server]

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "subload: FAILED: "+format+"\n", args...)
	if s := running.Load(); s != nil {
		s.stop()
	}
	os.Exit(1)
}
