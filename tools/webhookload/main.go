// Command webhookload measures webhook delivery under write load against the
// real worktrack binary on PostgreSQL: creates/s with none, one and ten
// subscribed fast receivers over concurrent writers; commit-to-receipt
// latency; the backlog left when writes stop; how fast one and two server
// processes drain a backlog; duplicates seen by the receivers; and a fast
// receiver's latency beside a 4-second one. See README.md beside it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	flagAdminURL = flag.String("db", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		"PostgreSQL URL used to create and drop the scratch database (never dropped itself)")
	flagScratch  = flag.String("scratch", "worktrack_webhookload", "name of the scratch database, dropped and created per scenario")
	flagBin      = flag.String("bin", "", "worktrack binary; default: go build ./cmd/worktrack into a temporary directory")
	flagWriters  = flag.Int("writers", 32, "concurrent task creators")
	flagDuration = flag.Duration("duration", 15*time.Second, "how long the writers write (LOAD_QUICK=1: 2s)")
	flagBacklog  = flag.Int("backlog", 20000, "deliveries in the drain scenarios (LOAD_QUICK=1: 2000)")
	flagOnly     = flag.String("only", "", "comma-separated scenarios to run (none,one,ten,slow,drain1,drain2); default all")
)

func main() {
	flag.Parse()
	quick := os.Getenv("LOAD_QUICK") == "1"
	if quick {
		// make load's quick mode (CI): short runs that prove the scenario
		// works, and fail on a duplicate send.
		*flagDuration, *flagBacklog = 2*time.Second, 2000
	}
	ctx := context.Background()
	bin := *flagBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "webhookload")
		must(err)
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "worktrack")
		out, err := exec.Command("go", "build", "-o", bin, "./cmd/worktrack").CombinedOutput()
		if err != nil {
			fail("go build ./cmd/worktrack (run from the repository root): %v\n%s", err, out)
		}
	}
	want := map[string]bool{}
	for _, s := range strings.Split(*flagOnly, ",") {
		if s != "" {
			want[s] = true
		}
	}
	run := func(name string) bool { return len(want) == 0 || want[name] }
	var rows []row
	var baseline float64
	var fastP99 time.Duration
	write := func(name string, hooks int, slow bool) {
		if !run(name) {
			return
		}
		fmt.Fprintf(os.Stderr, "webhookload: %s...\n", name)
		r := writeScenario(ctx, bin, hooks, slow)
		rw := row{name: name, r: r, slow: slow}
		switch {
		case name == "none":
			baseline = r.createsPerSec
		case baseline > 0:
			rw.note = fmt.Sprintf("creates %.2fx none", r.createsPerSec/baseline)
		}
		if name == "one" {
			fastP99 = r.p99
		}
		if slow && fastP99 > 0 {
			rw.note += fmt.Sprintf("; fast p99 %.2fx one; backlog includes the 4 s receiver's", float64(r.p99)/float64(fastP99))
		}
		rows = append(rows, rw)
	}
	write("none", 0, false)
	write("one", 1, false)
	write("ten", 10, false)
	write("slow", 1, true)
	var one float64
	for _, procs := range []int{1, 2} {
		name := fmt.Sprintf("drain%d", procs)
		if !run(name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "webhookload: %s...\n", name)
		d := drainScenario(ctx, bin, procs)
		rw := row{name: name, drain: &d}
		if procs == 1 {
			one = d.rate
		} else if one > 0 {
			rw.note = fmt.Sprintf("%.2fx drain1", d.rate/one)
		}
		rows = append(rows, rw)
	}
	printTable(rows)
	dups := 0
	for _, r := range rows {
		dups += r.r.duplicates
		if r.drain != nil {
			dups += r.drain.duplicates
		}
	}
	if quick {
		if dups > 0 {
			fail("quick run: %d duplicate sends", dups)
		}
		fmt.Println("webhookload: quick run passed: every write answered 2xx, every event delivered, no duplicate send")
	}
}

// row is one line of the table.
type row struct {
	slow  bool // the backlog holds the 4 s receiver's deliveries too
	name  string
	r     result
	drain *drained
	note  string
}

func printTable(rows []row) {
	fmt.Printf("\nwebhooks (PostgreSQL, %d writers for %s; drains of %d deliveries)\n", *flagWriters, *flagDuration, *flagBacklog)
	fmt.Printf("%8s %10s %15s %14s %9s %9s %13s %5s  %s\n",
		"scenario", "creates/s", "deliv/s during", "deliv/s after", "p50", "p99", "backlog end", "dups", "notes")
	ms := func(r result, d time.Duration) string {
		if r.deliveredWrite == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	for _, rw := range rows {
		if d := rw.drain; d != nil {
			fmt.Printf("%8s %10s %15s %14.0f %9s %9s %13s %5d  %s\n", rw.name, "-", "-", d.rate, "-", "-", "0", d.duplicates, rw.note)
			continue
		}
		r := rw.r
		during, after, backlog := "-", "-", "-"
		if r.deliveredWrite > 0 || r.pendingAtEnd > 0 {
			during = fmt.Sprintf("%.0f", float64(r.deliveredWrite)/flagDuration.Seconds())
			if r.drainAfter > 0 && r.pendingAtEnd > 0 && !rw.slow {
				after = fmt.Sprintf("%.0f", float64(r.pendingAtEnd)/r.drainAfter.Seconds())
			}
			backlog = fmt.Sprintf("%d (%.2fs)", r.pendingAtEnd, float64(r.pendingAtEnd)/max(r.createsPerSec, 1))
		}
		fmt.Printf("%8s %10.0f %15s %14s %9s %9s %13s %5d  %s\n", rw.name, r.createsPerSec, during, after, ms(r, r.p50), ms(r, r.p99), backlog, r.duplicates, rw.note)
	}
	fmt.Println("  p50/p99: commit-to-receipt at the (first) fast receiver during the writes, from the writer receiving its 201 (0 when the")
	fmt.Println("  delivery arrived first); backlog end: pending when the writes stopped")
	fmt.Println("  (seconds of creates); deliv/s after: that backlog over the time to drain it; dups: one webhook-id and attempt received twice")
}

// result is what a write scenario measured.
type result struct {
	creates        int
	createsPerSec  float64
	deliveredWrite int // deliveries received while the writers wrote
	pendingAtEnd   int64
	drainAfter     time.Duration
	p50, p99       time.Duration // commit-to-receipt of the first receiver, first attempts received during the writes
	duplicates     int
	slowGot        int
}

// writeScenario runs one server with hooks fast receivers (and a 4 s one
// when slow) subscribed to task.created, while the writers create tasks.
func writeScenario(ctx context.Context, bin string, hooks int, slow bool) result {
	dbURL := freshDatabase(ctx)
	key := provision(bin, dbURL)
	srv := startServer(bin, dbURL)
	defer srv.stop()
	c := &client{base: srv.base, key: key}
	prj := c.post("/v1/projects", map[string]any{"name": "Load", "key": "LOD"})["id"].(string)

	var recvs []*receiver
	for i := range hooks {
		rc := newReceiver(0)
		// Behind a gateway that wants its own credential: the custom
		// header is on every delivery, and the fast receivers' figures
		// include what it costs.
		rc.token = fmt.Sprintf("gateway-%d", i)
		recvs = append(recvs, rc)
		c.post("/v1/webhooks", map[string]any{"url": rc.url + fmt.Sprintf("/fast%d", i), "events": []string{"task.created"},
			"headers": map[string]string{"Authorization": "Bearer " + rc.token}})
	}
	var slowRc *receiver
	if slow {
		slowRc = newReceiver(4 * time.Second)
		c.post("/v1/webhooks", map[string]any{"url": slowRc.url + "/slow", "events": []string{"task.created"}})
	}

	committed := sync.Map{} // task id -> time the 201 arrived
	var creates atomic.Int64
	start := time.Now()
	stopAt := start.Add(*flagDuration)
	var wg sync.WaitGroup
	for range *flagWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stopAt) {
				res := c.post("/v1/projects/"+prj+"/tasks", map[string]any{"title": "load"})
				committed.Store(res["id"].(string), time.Now())
				creates.Add(1)
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	r := result{creates: int(creates.Load())}
	r.createsPerSec = float64(r.creates) / end.Sub(start).Seconds()
	if hooks == 0 {
		return r
	}
	r.pendingAtEnd = pending(ctx, dbURL)
	// Wait for the fast receivers to have everything.
	for _, rc := range recvs {
		rc.waitUnique(r.creates, 5*time.Minute)
	}
	r.drainAfter = time.Since(end)
	var lat []time.Duration
	for _, g := range recvs[0].snapshot() {
		if g.at.After(end) || g.attempt != "1" {
			continue
		}
		if t, ok := committed.Load(g.taskID); ok {
			lat = append(lat, max(g.at.Sub(t.(time.Time)), 0))
		}
	}
	r.deliveredWrite = len(lat)
	r.p50, r.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
	for _, rc := range recvs {
		r.duplicates += rc.duplicates()
	}
	if slowRc != nil {
		r.slowGot = len(slowRc.snapshot())
		r.duplicates += slowRc.duplicates()
	}
	return r
}

// drainScenario writes a backlog of deliveries straight into the database,
// then starts procs server processes and times until none is pending.
// drained is what a drain scenario measured.
type drained struct {
	rate       float64 // deliveries/s from the first receipt
	duplicates int
}

func drainScenario(ctx context.Context, bin string, procs int) drained {
	dbURL := freshDatabase(ctx)
	key := provision(bin, dbURL)
	rc := newReceiver(0)
	// One server to register the webhook, then stopped: the backlog is
	// inserted while no dispatcher runs.
	srv := startServer(bin, dbURL)
	c := &client{base: srv.base, key: key}
	hook := c.post("/v1/webhooks", map[string]any{"url": rc.url + "/drain", "events": []string{"task.created"}})["id"].(string)
	srv.stop()
	conn, err := pgx.Connect(ctx, dbURL)
	must(err)
	defer conn.Close(ctx)
	// One statement per Exec: pgx takes parameters only for single statements.
	for _, q := range []string{
		`INSERT INTO events (id, workspace_id, type, created_at, payload)
SELECT 'evt_backlog' || g, w.workspace_id, 'task.created', now(),
       convert_to('{"id":"evt_backlog' || g || '","object":"event","type":"task.created","data":{"id":"tsk_' || g || '"}}', 'UTF8')
FROM generate_series(1, $1::int) g, webhooks w WHERE w.id = $2`,
		`INSERT INTO webhook_deliveries (id, workspace_id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, window_start, created_at)
SELECT 'whd_backlog' || g, w.workspace_id, w.id, 'evt_backlog' || g, 'task.created', 'pending', 0, now(), now(), now()
FROM generate_series(1, $1::int) g, webhooks w WHERE w.id = $2`,
	} {
		_, err := conn.Exec(ctx, q, *flagBacklog, hook)
		must(err)
	}
	start := time.Now()
	var servers []*server
	for range procs {
		servers = append(servers, startServer(bin, dbURL))
	}
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for pending(ctx, dbURL) > 0 {
		if time.Since(start) > 10*time.Minute {
			fail("drain did not finish in 10 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	done := time.Now()
	took := done.Sub(start)
	all := rc.snapshot()
	first := done
	for _, g := range all {
		if g.at.Before(first) {
			first = g.at
		}
	}
	rate := float64(*flagBacklog) / done.Sub(first).Seconds()
	fmt.Fprintf(os.Stderr, "webhookload: drain%d: %d deliveries in %s from the first receipt (%s including process start); received %d\n",
		procs, *flagBacklog, done.Sub(first).Round(time.Millisecond), took.Round(time.Millisecond), len(all))
	return drained{rate: rate, duplicates: rc.duplicates()}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// --- the database ---

func scratchURL() string {
	u, err := url.Parse(*flagAdminURL)
	must(err)
	u.Path = "/" + *flagScratch
	return u.String()
}

func freshDatabase(ctx context.Context) string {
	conn, err := pgx.Connect(ctx, *flagAdminURL)
	must(err)
	defer conn.Close(ctx)
	name := pgx.Identifier{*flagScratch}.Sanitize()
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	must(err)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	must(err)
	return scratchURL()
}

func pending(ctx context.Context, dbURL string) int64 {
	conn, err := pgx.Connect(ctx, dbURL)
	must(err)
	defer conn.Close(ctx)
	var n int64
	must(conn.QueryRow(ctx, "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'").Scan(&n))
	return n
}

// provision migrates and makes a workspace, an admin and its key with the
// binary's sub-commands; it returns the key's secret.
func provision(bin, dbURL string) string {
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
	ws := cli("workspace", "create", "--name", "Load")["id"].(string)
	usr := cli("user", "create", "--workspace", ws, "--email", "load@example.com", "--name", "Load", "--role", "admin")["id"].(string)
	return cli("key", "create", "--user", usr)["secret"].(string)
}

// --- the server ---

type server struct {
	cmd  *exec.Cmd
	base string
}

func startServer(bin, dbURL string) *server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "WORKTRACK_ADDR="+addr,
		"WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true", "WORKTRACK_RATE_LIMIT=100000000", "WORKTRACK_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	must(cmd.Start())
	s := &server{cmd: cmd, base: "http://" + addr}
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

// --- the API client ---

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256}}

type client struct{ base, key string }

func (c *client) post(path string, body any) map[string]any {
	raw, err := json.Marshal(body)
	must(err)
	req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(raw))
	must(err)
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	must(err)
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		fail("POST %s: %d %s", path, res.StatusCode, out)
	}
	var m map[string]any
	must(json.Unmarshal(out, &m))
	return m
}

// --- the receivers ---

type got struct {
	at      time.Time
	eventID string
	attempt string
	taskID  string
}

type receiver struct {
	url   string
	delay time.Duration
	token string // when set, a request without "Authorization: Bearer <token>" is refused (401), as a gateway would
	mu    sync.Mutex
	all   []got
	seen  map[string]int // event id + attempt -> times received
	uniq  map[string]bool
}

func newReceiver(delay time.Duration) *receiver {
	rc := &receiver{delay: delay, seen: map[string]int{}, uniq: map[string]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	rc.url = "http://" + ln.Addr().String()
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return rc
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	if rc.token != "" && r.Header.Get("Authorization") != "Bearer "+rc.token {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var p struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &p)
	g := got{at: at, eventID: r.Header.Get("webhook-id"), attempt: r.Header.Get("X-service-Delivery-Attempt"), taskID: p.Data.ID}
	rc.mu.Lock()
	rc.all = append(rc.all, g)
	rc.seen[g.eventID+"#"+g.attempt]++
	rc.uniq[g.eventID] = true
	rc.mu.Unlock()
	if rc.delay > 0 {
		time.Sleep(rc.delay)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) snapshot() []got {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]got(nil), rc.all...)
}

func (rc *receiver) duplicates() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, c := range rc.seen {
		n += c - 1
	}
	return n
}

func (rc *receiver) waitUnique(n int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		rc.mu.Lock()
		have := len(rc.uniq)
		rc.mu.Unlock()
		if have >= n {
			return
		}
		if time.Now().After(deadline) {
			fail("receiver has %d of %d events after %s", have, n, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func must(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "webhookload: "+format+"\n", args...)
	os.Exit(1)
}
