// Command neighbourload measures what one tenant can do to another on one
// server, on PostgreSQL and on SQLite in turn: tenant B (its own
// workspace, three keys and a webhook with a fast receiver) runs a steady
// load alone; then tenant A floods alone, to measure A's throughput; then
// B runs again beside A's flood. A (a) sends bad keys from B's address,
// (b) runs the most expensive GraphQL the limits admit, as fast as the
// server lets it, (c) has 20 webhooks pointing at a receiver that accepts
// and never answers, with thousands of pending deliveries, (d) opens
// WebSockets until refused, and (e) runs 16 loops of costly searches,
// counts and pages of 100 over 20,000 tasks and 2 loops of bulk creations
// of 500, all through six keys of two users. It prints B's REST latency
// and webhook commit-to-receipt latency alone and beside A, where B's
// requests spent their time on the server (its access log: queued for
// database seats, holding them, the rest), the errors B saw, A's
// throughput alone and beside B, what A's attacks were answered, and the
// server's peak resident memory, against the targets of
// docs/performance.md. make load runs it (LOAD_SCENARIOS=neighbours).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/worktrack/worktrack/tools/loadkit"
)

var (
	flagAdminURL = flag.String("db", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		"PostgreSQL URL used to create and drop the scratch database (never dropped itself)")
	flagBackends = flag.String("backends", "postgres,sqlite", "the databases to run on, in turn: postgres, sqlite")
	flagBin      = flag.String("bin", "bin/worktrack", "the worktrack binary")
	flagDuration = flag.Duration("duration", 60*time.Second, "how long each phase runs (LOAD_QUICK=1: 3s)")
	// Every key has the default rate limit, 600 a minute: B reads through
	// three keys, 20 a second in all, and writes 1 a second; A sends its
	// expensive GraphQL at a key's limit.
	flagRate   = flag.Int("rate", 20, "B's REST reads per second")
	flagWrites = flag.Int("writes", 1, "B's task creations per second, each a webhook delivery")
	flagALimit = flag.Int("a-rate", 10, "A's expensive GraphQL operations per second: its rate limit, 600 a minute")
	flagEnv    = flag.String("server-env", "", "more of the server's environment, KEY=VALUE, comma-separated (to compare settings: WORKTRACK_DB_SEATS, WORKTRACK_DB_WORKSPACE_SHARE)")
	flagFlood  = flag.String("flood", "", "internal: be A's flood process, on this base URL")
	flagLog    = flag.String("server-log", "", "write the server's log to this file (the backend's name is added)")
	flagCPU    = flag.String("cpuprofile", "", "write the server's CPU profile of the phase beside A to this file (the backend's name is added)")
)

// sizes of what the tenants hold.
type sizes struct {
	bTasks, aProjects, aTasksPerProject, aHooks, aBacklogTasks, aSearchable int
}

// bKeys is how many keys, each of its own user, B's reads go through: 20
// a second is twice a key's (and a user's) default rate limit.
const bKeys = 3

func main() {
	flag.Parse()
	if *flagFlood != "" {
		runFlood(*flagFlood)
		return
	}
	sz := sizes{bTasks: 100, aProjects: 10, aTasksPerProject: 20, aHooks: 20, aBacklogTasks: 200, aSearchable: 20000}
	if os.Getenv("LOAD_QUICK") == "1" {
		*flagDuration = 3 * time.Second
		sz = sizes{bTasks: 20, aProjects: 5, aTasksPerProject: 10, aHooks: 20, aBacklogTasks: 50, aSearchable: 2000}
	}
	ok := true
	for _, backend := range strings.Split(*flagBackends, ",") {
		backend = strings.TrimSpace(backend)
		if backend != "postgres" && backend != "sqlite" {
			must(fmt.Errorf("-backends: %q is not postgres or sqlite", backend))
		}
		ok = run(backend, sz) && ok
	}
	if os.Getenv("LOAD_QUICK") == "1" && !ok {
		fmt.Fprintln(os.Stderr, "neighbourload: FAILED: B saw errors beside A")
		os.Exit(1)
	}
}

// run measures B alone, A alone and B beside A on one backend, prints the
// tables, and says whether B saw no error beside A.
func run(backend string, sz sizes) bool {
	ctx := context.Background()
	var db string
	if backend == "postgres" {
		var err error
		db, err = loadkit.FreshDatabase(ctx, *flagAdminURL, "worktrack_neighbours")
		must(err)
	} else {
		dir, err := os.MkdirTemp("", "worktrack-neighbours-")
		must(err)
		defer os.RemoveAll(dir)
		db = "sqlite:" + filepath.Join(dir, "neighbours.db")
	}
	logf("%s: %s", backend, db)
	_, err := loadkit.CLI(*flagBin, db, "migrate")
	must(err)
	a, err := loadkit.NewTenant(*flagBin, db, "Alpha")
	must(err)
	b, err := loadkit.NewTenant(*flagBin, db, "Beta")
	must(err)
	log := &syncBuffer{}
	// The access log at info, in JSON: B's lines give where its requests
	// spent their time (phases).
	env := []string{"WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true", "WORKTRACK_LOG_LEVEL=info", "WORKTRACK_LOG_FORMAT=json"}
	if *flagEnv != "" {
		env = append(env, strings.Split(*flagEnv, ",")...)
	}
	pprofAddr := ""
	if *flagCPU != "" {
		pprofAddr, err = loadkit.FreeAddr()
		must(err)
		env = append(env, "WORKTRACK_PPROF_ADDR="+pprofAddr)
	}
	srv, err := loadkit.StartServer(*flagBin, db, log, env...)
	must(err)
	defer srv.Stop()
	httpc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256}}
	ca := loadkit.Client{Base: srv.Base, Key: a.Key, HTTP: httpc}
	cb := loadkit.Client{Base: srv.Base, Key: b.Key, HTTP: httpc}
	bReaders, bUsers := []loadkit.Client{cb}, []string{b.User}
	for i := range bKeys - 1 {
		// A user's keys share the user's rate limit (a key's, by
		// default): B's readers are users of their own.
		u, err := loadkit.CLI(*flagBin, db, "user", "create", "--workspace", b.Workspace,
			"--email", fmt.Sprintf("beta%d@example.com", i+1), "--name", fmt.Sprintf("Beta %d", i+1), "--role", "member")
		must(err)
		k, err := loadkit.CLI(*flagBin, db, "key", "create", "--user", u["id"].(string))
		must(err)
		bReaders = append(bReaders, loadkit.Client{Base: srv.Base, Key: k["secret"].(string), HTTP: httpc})
		bUsers = append(bUsers, u["id"].(string))
	}

	logf("setting up B: %d tasks, a webhook to a fast receiver", sz.bTasks)
	bt := setUpB(ctx, cb, sz)
	keys := mintKeys(*flagBin, db, a, ca)
	// Before A's webhooks, which would each be sent every task created.
	logf("setting up A's searches: %d tasks in bulk creations, %d keys of %d users", sz.aSearchable, aUsers*aKeysPerUser, aUsers)
	bulkProject := seedSearchable(ctx, keys, sz.aSearchable)
	logf("setting up A: %d projects of %d tasks, %d webhooks to a receiver that never answers, %d deliveries pending",
		sz.aProjects, sz.aTasksPerProject, sz.aHooks, sz.aHooks*sz.aBacklogTasks)
	blackhole := setUpA(ctx, ca, sz)
	defer blackhole.Close()

	var phases [3]window
	logf("B alone for %s", *flagDuration)
	phases[0].start = time.Now()
	alone := measureB(ctx, bReaders, cb, bt)
	phases[0].end = time.Now()
	alone.collect(bt.rc, 15*time.Second)

	attacks := startFlood(srv.Base, keys, bulkProject)
	time.Sleep(2 * time.Second) // the attacks reach their pace
	logf("A alone for %s", *flagDuration)
	phases[1].start = time.Now()
	aAlone := attacks.throughput(*flagDuration)
	phases[1].end = time.Now()

	logf("B beside A for %s", *flagDuration)
	profiled := make(chan error, 1)
	if pprofAddr != "" {
		go func() { profiled <- saveCPUProfile(pprofAddr, *flagCPU+"."+backend, *flagDuration) }()
	} else {
		profiled <- nil
	}
	phases[2].start = time.Now()
	aBeside := make(chan float64, 1)
	go func() { aBeside <- attacks.throughput(*flagDuration) }()
	with := measureB(ctx, bReaders, cb, bt)
	phases[2].end = time.Now()
	must(<-profiled)
	aWith := <-aBeside
	aReport := attacks.stop()
	// B's deliveries are timed from their events: one that A's flood
	// delayed is counted at its lateness, and lost only if it has not
	// arrived two minutes after A stopped.
	with.collect(bt.rc, 2*time.Minute)
	peak, err := srv.PeakRSS()
	must(err)
	if *flagLog != "" {
		must(os.WriteFile(*flagLog+"."+backend, []byte(log.String()), 0o600))
	}
	lines := bLines(log.String(), bUsers)
	r := report(os.Stdout, backend, alone, with, aReport, peak,
		phasesOf(lines, phases[0]), phasesOf(lines, phases[2]), aAlone, aWith)
	if os.Getenv("LOAD_QUICK") == "1" && !r.noErrors {
		fmt.Fprintf(os.Stderr, "neighbourload: %s: B saw errors beside A; the server's log:\n%s", backend, log.String())
	}
	return r.noErrors
}

// bTarget is what B's load reads and writes.
type bTarget struct {
	project string
	tasks   []string
	rc      *receiver
}

func setUpB(ctx context.Context, c loadkit.Client, sz sizes) bTarget {
	rc := &receiver{seen: map[string]time.Duration{}}
	hook := &http.Server{Handler: rc, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	go func() { _ = hook.Serve(ln) }()
	_, err = c.Post(ctx, "/v1/webhooks", map[string]any{"url": "http://" + ln.Addr().String() + "/hook", "events": []string{"task.created"}})
	must(err)
	p, err := c.Post(ctx, "/v1/projects", map[string]any{"name": "Beta", "key": "BETA"})
	must(err)
	t := bTarget{project: p["id"].(string), rc: rc}
	for i := range sz.bTasks {
		task, err := c.Post(ctx, "/v1/projects/"+t.project+"/tasks", map[string]any{"title": fmt.Sprintf("Beta %d", i)})
		must(err)
		t.tasks = append(t.tasks, task["id"].(string))
	}
	rc.waitFor(t.tasks, 30*time.Second)
	return t
}

// setUpA gives A projects to query, and webhooks to a receiver that
// accepts connections and never answers, with a backlog of deliveries.
func setUpA(ctx context.Context, c loadkit.Client, sz sizes) net.Listener {
	for p := range sz.aProjects {
		prj, err := c.Post(ctx, "/v1/projects", map[string]any{"name": fmt.Sprintf("Alpha %d", p), "key": fmt.Sprintf("ALPHA%d", p)})
		must(err)
		for i := range sz.aTasksPerProject {
			_, err := c.Post(ctx, "/v1/projects/"+prj["id"].(string)+"/tasks", map[string]any{"title": fmt.Sprintf("Alpha %d", i)})
			must(err)
		}
	}
	blackhole, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	go func() {
		for {
			conn, err := blackhole.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, conn) }() // read, never answer
		}
	}()
	for i := range sz.aHooks {
		_, err := c.Post(ctx, "/v1/webhooks", map[string]any{"url": fmt.Sprintf("http://%s/dead/%d", blackhole.Addr(), i), "events": []string{"task.created"}})
		must(err)
	}
	prj, err := c.Post(ctx, "/v1/projects", map[string]any{"name": "Backlog", "key": "BACKLOG"})
	must(err)
	for i := range sz.aBacklogTasks {
		_, err := c.Post(ctx, "/v1/projects/"+prj["id"].(string)+"/tasks", map[string]any{"title": fmt.Sprintf("Backlog %d", i)})
		must(err)
	}
	return blackhole
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "neighbourload:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "neighbourload: "+format+"\n", args...)
}

// syncBuffer is the server's log, kept to show when a quick run fails.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// counter counts outcomes by name.
type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[name]++
}

func (c *counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, k := range sortedKeys(c.m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.m[k]))
	}
	return strings.Join(parts, ", ")
}

// saveCPUProfile saves the server's CPU profile over d into file.
func saveCPUProfile(addr, file string, d time.Duration) error {
	res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds())))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	defer out.Close()
	_, err = io.Copy(out, res.Body)
	logf("CPU profile of the phase beside A in %s (go tool pprof -top %s)", file, file)
	return err
}
