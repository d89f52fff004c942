// Command load is the load harness of `make load`: it seeds PostgreSQL (and
// an SQLite file) with 100,000 tasks, starts `bin/worktrack serve` and the
// reference program of ../shared/perf/reference as real processes, drives
// them with wrk (32 connections, A and B interleaved) and prints one table.
// See docs/performance.md.
//
// Environment: TEST_DATABASE_URL (the PostgreSQL server to create its
// databases on), LOAD_QUICK=1 (2 s runs, one pair, non-zero exit on any
// error response), LOAD_SCENARIOS=a,b (a subset), LOAD_KEEP=1 (keep the
// databases and the temporary directory), LOAD_DURATION and LOAD_PAIRS
// (override the run length and the number of pairs), LOAD_REF_DIR (the
// reference's source directory).
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	// Registers the "sqlite" database/sql driver (modernc, via glebarez) that
	// the server itself uses.
	_ "github.com/glebarez/sqlite"
)

const (
	defaultAdminURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	wtDBName        = "worktrack_load"
	refDBName       = "worktrack_load_ref"
	refConns        = 20
	// dashboardOrigin is the origin Worktrack's requests claim and its
	// servers allow (WORKTRACK_CORS_ORIGINS): every answer carries the
	// CORS headers, the costlier case.
	dashboardOrigin = "http://dashboard.load.test"
)

type options struct {
	quick     bool
	keep      bool
	duration  string // wrk -d
	pairs     int
	selected  []scenario
	webhooks  bool // run tools/webhookload after the table
	subs      bool // run tools/subload after that
	neighbors bool // run tools/neighbourload after that
	adminURL  string
	refSrcDir string
}

type harness struct {
	opts  options
	root  string // the repository
	tmp   string
	admin *pgx.Conn
	data  *dataset
	// hooked is the second workspace, with one webhook to receiver
	// (rest-create-webhook); nil when no selected scenario needs it.
	hooked   *dataset
	receiver *receiver
	// hookedCreates counts the creates answered 2xx in hooked: the
	// deliveries the receiver is owed at least.
	hookedCreates int64
	wtDSN         string              // Worktrack's database
	wtConn        *pgx.Conn           // on wtDSN, opened by settleDeliveries
	servers       map[string]*process // Worktrack, by backend
	// spans is the OTLP sink of the traced backends; nil until one starts.
	spans  *spanSink
	ref    *process
	refURL string
	// refGQL is ../shared/perf/reference-graphql, the bare gqlgen floor,
	// over the reference's database.
	refGQL      *process
	refGQLURL   string
	refPathsDir string
	paths       map[string][]string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx)
	stop()
	os.Exit(code)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "load: "+format+"\n", args...)
}

func run(ctx context.Context) int {
	opts, err := readOptions()
	if err != nil {
		logf("%v", err)
		return 2
	}
	if len(opts.selected) > 0 {
		if code := runReads(ctx, opts); code != 0 {
			return code
		}
	}
	if opts.webhooks {
		if err := runWebhooks(ctx, opts); err != nil {
			logf("FAILED: webhook scenario: %v", err)
			return 1
		}
	}
	if opts.subs {
		if err := runTool(ctx, opts, "./tools/subload"); err != nil {
			logf("FAILED: subscription scenario: %v", err)
			return 1
		}
	}
	if opts.neighbors {
		if err := runTool(ctx, opts, "./tools/neighbourload"); err != nil {
			logf("FAILED: neighbours scenario: %v", err)
			return 1
		}
	}
	return 0
}

// neighboursScenario is LOAD_SCENARIOS' name for tools/neighbourload's
// table (tenant B alone, then beside tenant A's attacks).
const neighboursScenario = "neighbours"

// subsScenario is LOAD_SCENARIOS' name for tools/subload's table (1,000
// idle subscriptions, then writes).
const subsScenario = "subscriptions"

// webhookScenario is LOAD_SCENARIOS' name for tools/webhookload's table.
const webhookScenario = "webhooks"

// runWebhooks runs tools/webhookload (its own table: creates with none,
// one and ten receivers, a slow receiver beside a fast one, backlog drains
// by one and two processes) with bin/worktrack, on the server of
// TEST_DATABASE_URL. LOAD_QUICK passes through.
func runWebhooks(ctx context.Context, opts options) error {
	return runTool(ctx, opts, "./tools/webhookload")
}

// runTool runs one of the harness's scenario commands with bin/worktrack on
// the server of TEST_DATABASE_URL; LOAD_QUICK passes through.
func runTool(ctx context.Context, opts options, pkg string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	// goBin is the developer's own go command (make passes GO).
	cmd := exec.CommandContext(ctx, goBin, "run", pkg, //nolint:gosec // see above
		"-bin", filepath.Join(root, "bin", "worktrack"), "-db", opts.adminURL)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// runReads is the wrk table: every selected scenario against the reference.
func runReads(ctx context.Context, opts options) int {
	h := &harness{opts: opts, servers: map[string]*process{}, paths: map[string][]string{}}
	defer h.cleanup()
	rows, err := h.prepareAndRun(ctx)
	if err != nil {
		logf("FAILED: %v", err)
		return 1
	}
	printTable(os.Stdout, rows, opts)
	if opts.quick {
		if bad := failures(rows); len(bad) > 0 {
			logf("FAILED: %s", strings.Join(bad, "; "))
			return 1
		}
		logf("quick run passed: every scenario answered 2xx with no socket errors")
	}
	return 0
}

func readOptions() (options, error) {
	o := options{
		quick:     os.Getenv("LOAD_QUICK") == "1",
		keep:      os.Getenv("LOAD_KEEP") == "1",
		duration:  "15s",
		pairs:     5,
		adminURL:  os.Getenv("TEST_DATABASE_URL"),
		refSrcDir: os.Getenv("LOAD_REF_DIR"),
	}
	if o.adminURL == "" {
		o.adminURL = defaultAdminURL
	}
	if o.refSrcDir == "" {
		o.refSrcDir = filepath.Join("..", "shared", "perf", "reference")
	}
	if o.quick {
		o.duration, o.pairs = "2s", 1
	}
	if v := os.Getenv("LOAD_DURATION"); v != "" {
		if _, err := time.ParseDuration(v); err != nil {
			return o, fmt.Errorf("LOAD_DURATION: %w", err)
		}
		o.duration = v
	}
	if v := os.Getenv("LOAD_PAIRS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return o, fmt.Errorf("LOAD_PAIRS: %q is not a positive integer", v)
		}
		o.pairs = n
	}
	o.selected = scenarios
	o.webhooks, o.subs, o.neighbors = true, true, true
	if v := strings.TrimSpace(os.Getenv("LOAD_SCENARIOS")); v != "" {
		byName := map[string]scenario{}
		var names []string
		for _, s := range scenarios {
			byName[s.name] = s
			names = append(names, s.name)
		}
		want := map[string]bool{}
		o.webhooks, o.subs, o.neighbors = false, false, false
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if n == webhookScenario {
				o.webhooks = true
				continue
			}
			if n == subsScenario {
				o.subs = true
				continue
			}
			if n == neighboursScenario {
				o.neighbors = true
				continue
			}
			if _, ok := byName[n]; !ok {
				return o, fmt.Errorf("LOAD_SCENARIOS: no scenario %q (have: %s, %s)", n, strings.Join(names, ", "),
					webhookScenario+", "+subsScenario+", "+neighboursScenario)
			}
			want[n] = true
		}
		o.selected = nil
		for _, s := range scenarios { // keep the table's order
			if want[s.name] {
				o.selected = append(o.selected, s)
			}
		}
	}
	return o, nil
}

// prepareAndRun does everything up to the table: tools, databases, seed,
// processes, path files, then each scenario.
func (h *harness) prepareAndRun(ctx context.Context) ([]result, error) {
	start := time.Now()
	var err error
	if h.root, err = repoRoot(); err != nil {
		return nil, err
	}
	bin := filepath.Join(h.root, "bin", "worktrack")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s missing: run `make build` first (make load does)", bin)
	}
	if err := ensureWrk(ctx); err != nil {
		return nil, err
	}
	if h.tmp, err = os.MkdirTemp("", "worktrack-load-"); err != nil {
		return nil, err
	}
	logf("working directory %s", h.tmp)

	needs := map[string]bool{}
	needRef, needRefGQL := false, false
	for _, s := range h.opts.selected {
		needs[s.backend] = true
		if s.against != "" {
			needs[s.against] = true
		}
		if tracedEnv[s.backend] != nil {
			needs[backendPostgres] = true // its database and its seed
		}
		needRef = needRef || (s.ref != nil && !s.againstUnscoped && s.against == "") || s.refGQL
		needRefGQL = needRefGQL || s.refGQL
	}

	refBin := filepath.Join(h.tmp, "reference")
	if needRef {
		logf("building the reference from %s", h.opts.refSrcDir)
		if err := h.command(ctx, h.root, nil, goTool(), "build", "-C", h.opts.refSrcDir, "-o", refBin, "."); err != nil {
			return nil, fmt.Errorf("build the reference: %w", err)
		}
	}
	refGQLBin := filepath.Join(h.tmp, "reference-graphql")
	if needRefGQL {
		src := filepath.Join(filepath.Dir(h.opts.refSrcDir), "reference-graphql")
		logf("building the GraphQL reference from %s", src)
		if err := h.command(ctx, h.root, nil, goTool(), "build", "-C", src, "-o", refGQLBin, "."); err != nil {
			return nil, fmt.Errorf("build the GraphQL reference: %w", err)
		}
	}
	bins := []string{bin}
	if needRef {
		bins = append(bins, refBin)
	}
	if needRefGQL {
		bins = append(bins, refGQLBin)
	}
	for _, b := range bins {
		if err := dropFromPageCache(b); err != nil {
			return nil, err
		}
	}

	if h.admin, err = pgx.Connect(ctx, h.opts.adminURL); err != nil {
		return nil, fmt.Errorf("TEST_DATABASE_URL: %w", err)
	}
	wtDSN, err := h.recreateDB(ctx, wtDBName)
	if err != nil {
		return nil, err
	}
	h.wtDSN = wtDSN
	h.data = newDataset()
	for _, s := range h.opts.selected {
		if s.hooked && h.hooked == nil {
			h.hooked = newHookedDataset()
			if h.receiver, err = startReceiver(); err != nil {
				return nil, err
			}
		}
	}
	sqlitePath := filepath.Join(h.tmp, "worktrack.db")
	var refDSN string
	if needRef {
		if refDSN, err = h.recreateDB(ctx, refDBName); err != nil {
			return nil, err
		}
	}
	// The three seeds are independent and spend their time in different
	// processes (PostgreSQL, this one, the reference): run them together.
	var seeds []func() error
	if needs[backendPostgres] {
		seeds = append(seeds, func() error {
			t := time.Now()
			if err := h.command(ctx, h.root, []string{"DATABASE_URL=" + wtDSN}, bin, "migrate"); err != nil {
				return fmt.Errorf("migrate %s: %w", wtDBName, err)
			}
			if err := seedPostgres(ctx, wtDSN, h.data); err != nil {
				return fmt.Errorf("seed %s: %w", wtDBName, err)
			}
			if h.hooked != nil {
				if err := seedPostgres(ctx, wtDSN, h.hooked); err != nil {
					return fmt.Errorf("seed %s's second workspace: %w", wtDBName, err)
				}
			}
			logf("migrated and seeded %s (%d tasks, %d projects) in %s", wtDBName, len(h.data.tasks), len(h.data.projects), time.Since(t).Round(time.Millisecond))
			return nil
		})
	}
	if needs[backendSQLite] {
		seeds = append(seeds, func() error {
			t := time.Now()
			if err := h.command(ctx, h.root, []string{"DATABASE_URL=sqlite:" + sqlitePath}, bin, "migrate"); err != nil {
				return fmt.Errorf("migrate %s: %w", sqlitePath, err)
			}
			if err := seedSQLite(ctx, sqlitePath, h.data); err != nil {
				return fmt.Errorf("seed %s: %w", sqlitePath, err)
			}
			logf("migrated and seeded %s in %s", sqlitePath, time.Since(t).Round(time.Millisecond))
			return nil
		})
	}
	if needRef {
		h.refPathsDir = filepath.Join(h.tmp, "refpaths")
		seeds = append(seeds, func() error {
			t := time.Now()
			if err := os.Mkdir(h.refPathsDir, 0o700); err != nil {
				return err
			}
			if err := h.command(ctx, h.tmp, nil, refBin, "-dsn", refDSN, "-seed"); err != nil {
				return fmt.Errorf("seed the reference: %w", err)
			}
			// Vacuumed like Worktrack's database (seedPostgres), so that
			// both sides read tables in the same state.
			if err := vacuum(ctx, refDSN); err != nil {
				return fmt.Errorf("vacuum the reference: %w", err)
			}
			if err := h.command(ctx, h.tmp, nil, refBin, "-dsn", refDSN, "-genpaths", h.refPathsDir); err != nil {
				return fmt.Errorf("reference paths: %w", err)
			}
			logf("seeded %s with the reference's -seed in %s", refDBName, time.Since(t).Round(time.Millisecond))
			return nil
		})
	}
	if err := parallel(seeds...); err != nil {
		return nil, err
	}
	if needRef {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		h.refURL = "http://" + addr
		if h.ref, err = startProcess(ctx, "reference", filepath.Join(h.tmp, "reference.log"), nil,
			refBin, "-dsn", refDSN, "-addr", addr, "-conns", strconv.Itoa(refConns)); err != nil {
			return nil, err
		}
		if err := waitReady(ctx, h.ref, h.refURL+"/tasks/none"); err != nil {
			return nil, err
		}
	}
	if needRefGQL {
		if err := h.startRefGQL(ctx, refGQLBin, refDSN); err != nil {
			return nil, err
		}
	}
	for _, b := range []string{backendPostgres, backendSQLite, backendTraced, backendTraced1pct} {
		if !needs[b] {
			continue
		}
		dsn := wtDSN
		if b == backendSQLite {
			dsn = "sqlite:" + sqlitePath
		}
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		env := []string{
			"DATABASE_URL=" + dsn,
			"WORKTRACK_ADDR=" + addr,
			"WORKTRACK_RATE_LIMIT=1000000000",
			"WORKTRACK_RATE_WINDOW=1s",
			"WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true", // the receiver listens on 127.0.0.1
			"WORKTRACK_CORS_ORIGINS=" + dashboardOrigin,
		}
		if traced := tracedEnv[b]; traced != nil {
			if h.spans == nil {
				if h.spans, err = startSpanSink(); err != nil {
					return nil, err
				}
			}
			env = append(append(env, traced...), "OTEL_EXPORTER_OTLP_ENDPOINT="+h.spans.url, "OTEL_SERVICE_NAME=worktrack-"+b)
		}
		p, err := startProcess(ctx, "worktrack-"+b, filepath.Join(h.tmp, "worktrack-"+b+".log"), env, bin, "serve")
		if err != nil {
			return nil, err
		}
		p.url = "http://" + addr
		h.servers[b] = p
		if err := waitReady(ctx, p, p.url+"/readyz"); err != nil {
			return nil, err
		}
		if b == backendPostgres && h.hooked != nil {
			if err := h.registerHook(ctx, p.url); err != nil {
				return nil, err
			}
		}
	}
	logf("ready after %s; running %d scenario(s), %d pair(s) of %s", time.Since(start).Round(time.Millisecond), len(h.opts.selected), h.opts.pairs, h.opts.duration)

	var rows []result
	for _, s := range h.opts.selected {
		r, err := h.runScenario(ctx, s)
		if err != nil {
			return rows, fmt.Errorf("scenario %s: %w", s.name, err)
		}
		rows = append(rows, r)
		if s.hooked {
			logf("%s: the webhook receiver has had %d deliveries", s.name, h.receiver.deliveries.Load())
		}
		if tracedEnv[s.backend] != nil {
			logf("%s: the span sink has had %d exports, %.1f MiB", s.name, h.spans.exports.Load(), float64(h.spans.bytes.Load())/(1<<20))
		}
	}
	logf("done in %s", time.Since(start).Round(time.Second))
	return rows, nil
}

// parallel runs fns at once and returns their errors joined.
func parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, f := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// recreateDB drops and creates a database on the admin server and returns
// its URL.
func (h *harness) recreateDB(ctx context.Context, name string) (string, error) {
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := h.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("drop %s: %w", name, err)
	}
	if _, err := h.admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	return dbURL(h.opts.adminURL, name)
}

func dbURL(admin, name string) (string, error) {
	u, err := url.Parse(admin)
	if err != nil {
		return "", fmt.Errorf("TEST_DATABASE_URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// vacuum runs VACUUM ANALYZE on the database of dsn.
func vacuum(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "VACUUM ANALYZE")
	return err
}

// startRefGQL starts the bare gqlgen floor on the reference's database.
func (h *harness) startRefGQL(ctx context.Context, bin, dsn string) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	h.refGQLURL = "http://" + addr
	if h.refGQL, err = startProcess(ctx, "reference-graphql", filepath.Join(h.tmp, "reference-graphql.log"), nil,
		bin, "-dsn", dsn, "-addr", addr, "-conns", strconv.Itoa(refConns)); err != nil {
		return err
	}
	return waitReady(ctx, h.refGQL, h.refGQLURL+"/graphql")
}

// cleanup stops what the harness started and, unless LOAD_KEEP=1, drops its
// databases and removes its temporary directory.
func (h *harness) cleanup() {
	for _, p := range h.servers {
		p.stop()
	}
	if h.ref != nil {
		h.ref.stop()
	}
	if h.refGQL != nil {
		h.refGQL.stop()
	}
	if h.wtConn != nil {
		_ = h.wtConn.Close(context.Background())
	}
	if h.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if h.opts.keep {
		wt, _ := dbURL(h.opts.adminURL, wtDBName)
		logf("LOAD_KEEP=1: kept %s, %s and %s; API key %s", wt, refDBName, h.tmp, h.data.secret)
	} else {
		for _, n := range []string{wtDBName, refDBName} {
			if _, err := h.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)"); err != nil {
				logf("drop %s: %v", n, err)
			}
		}
		if h.tmp != "" {
			_ = os.RemoveAll(h.tmp)
		}
	}
	_ = h.admin.Close(ctx)
}

func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(wd, "go.mod"))
	if err != nil || !strings.Contains(string(b), "module github.com/worktrack/worktrack\n") {
		return "", errors.New("run from the repository root (make load)")
	}
	return wd, nil
}

func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// ensureWrk installs Debian's wrk when it is missing and we are root; else it
// says how.
func ensureWrk(ctx context.Context) error {
	if _, err := exec.LookPath("wrk"); err == nil {
		return nil
	}
	if os.Geteuid() != 0 {
		return errors.New("wrk is missing; install it with: sudo apt-get update && sudo apt-get install -y wrk")
	}
	logf("wrk is missing: apt-get update && apt-get install -y wrk")
	for _, args := range [][]string{{"update"}, {"install", "-y", "wrk"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w", strings.Join(args, " "), err)
		}
	}
	return nil
}

// command runs a short command to completion, its output shown only when it
// fails.
func (h *harness) command(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return nil
}
