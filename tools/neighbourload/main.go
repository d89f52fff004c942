// Command neighbourload measures what one tenant can do to another on one
// server: tenant B (its own workspace, key and webhook with a fast receiver)
// runs a steady load alone, then again while tenant A, in the same run,
// (a) sends bad keys from B's address, (b) runs the most expensive GraphQL
// the limits admit, as fast as the server lets it, (c) has 20 webhooks
// pointing at a receiver that accepts and never answers, with thousands of
// pending deliveries, (d) opens WebSockets until refused, and (e) runs 16
// loops of costly searches and counts over 20,000 tasks, all through six
// keys of two users. It prints B's
// REST latency and webhook commit-to-receipt latency alone and beside A,
// the errors B saw, what A's attacks were answered, and the server's peak
// resident memory, against the targets of docs/performance.md. make load
// runs it (LOAD_SCENARIOS=neighbours).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/worktrack/worktrack/tools/loadkit"
)

var (
	flagAdminURL = flag.String("db", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		"PostgreSQL URL used to create and drop the scratch database (never dropped itself)")
	flagBin      = flag.String("bin", "bin/worktrack", "the worktrack binary")
	flagDuration = flag.Duration("duration", 30*time.Second, "how long B's load runs in each phase (LOAD_QUICK=1: 3s)")
	// Every key has the default rate limit, 600 a minute: B reads 8 and
	// writes 1 a second, under it; A sends its expensive GraphQL at it.
	flagRate   = flag.Int("rate", 6, "B's REST reads per second")
	flagWrites = flag.Int("writes", 1, "B's task creations per second, each a webhook delivery")
	flagALimit = flag.Int("a-rate", 10, "A's expensive GraphQL operations per second: its rate limit, 600 a minute")
	flagCPU    = flag.String("cpuprofile", "", "write the server's CPU profile of the phase beside A to this file")
)

// sizes of what the tenants hold.
type sizes struct {
	bTasks, aProjects, aTasksPerProject, aHooks, aBacklogTasks, aSearchable int
}

func main() {
	flag.Parse()
	sz := sizes{bTasks: 100, aProjects: 10, aTasksPerProject: 20, aHooks: 20, aBacklogTasks: 200, aSearchable: 20000}
	if os.Getenv("LOAD_QUICK") == "1" {
		*flagDuration = 3 * time.Second
		sz = sizes{bTasks: 20, aProjects: 5, aTasksPerProject: 10, aHooks: 20, aBacklogTasks: 50, aSearchable: 2000}
	}
	ctx := context.Background()
	db, err := loadkit.FreshDatabase(ctx, *flagAdminURL, "worktrack_neighbours")
	must(err)
	_, err = loadkit.CLI(*flagBin, db, "migrate")
	must(err)
	a, err := loadkit.NewTenant(*flagBin, db, "Alpha")
	must(err)
	b, err := loadkit.NewTenant(*flagBin, db, "Beta")
	must(err)
	log := &syncBuffer{}
	env := []string{"WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true", "WORKTRACK_LOG_LEVEL=warn"}
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

	logf("setting up B: %d tasks, a webhook to a fast receiver", sz.bTasks)
	bt := setUpB(ctx, cb, sz)
	logf("setting up A: %d projects of %d tasks, %d webhooks to a receiver that never answers, %d deliveries pending",
		sz.aProjects, sz.aTasksPerProject, sz.aHooks, sz.aHooks*sz.aBacklogTasks)
	blackhole := setUpA(ctx, ca, sz)
	defer blackhole.Close()
	logf("setting up A's searches: %d more tasks, %d keys of %d users", sz.aSearchable, aUsers*aKeysPerUser, aUsers)
	seedSearchable(ctx, db, a.Workspace, sz.aSearchable)
	keys := mintKeys(*flagBin, db, a, ca)

	logf("B alone for %s", *flagDuration)
	alone := measureB(ctx, cb, bt)
	attacks := startAttacks(ctx, srv.Base, ca, keys)
	time.Sleep(2 * time.Second) // the attacks reach their pace
	logf("B beside A for %s", *flagDuration)
	profiled := make(chan error, 1)
	if pprofAddr != "" {
		go func() { profiled <- saveCPUProfile(pprofAddr, *flagCPU, *flagDuration) }()
	} else {
		profiled <- nil
	}
	with := measureB(ctx, cb, bt)
	must(<-profiled)
	attacks.stop()
	peak, err := srv.PeakRSS()
	must(err)
	ok := report(os.Stdout, alone, with, attacks, peak)
	if os.Getenv("LOAD_QUICK") == "1" && !ok.noErrors {
		fmt.Fprintf(os.Stderr, "neighbourload: FAILED: B saw errors beside A\n%s", log.String())
		os.Exit(1)
	}
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
	rc.waitFor(sz.bTasks, 30*time.Second)
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
