package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// wrkRun is one wrk run's RESULT line (see get.lua).
type wrkRun struct {
	reqPerSec  float64
	p50, p99   float64 // ms
	requests   int64
	non2xx     int64 // wrk's status errors: responses with status >= 400
	socketErrs int64 // connect, read, write and timeout errors
}

// result is one row of the table.
type result struct {
	sc      scenario
	wt, ref []wrkRun
	ratios  []float64 // per pair: Worktrack units/s over reference units/s
	// sent, for a hooked scenario, is per pair the ratio of the creates
	// over the run and the time the deliveries left unsent then took
	// (settleDeliveries), against the other side's req/s: what the server
	// sustains when every create's delivery is sent.
	sent     []float64
	drain    time.Duration // the hooked side's last settleDeliveries
	peakRSS  int64         // kB, the Worktrack process, over the whole scenario
	newConns int64         // pg_stat_database.sessions delta; -1 when not measured
}

var resultRe = regexp.MustCompile(`RESULT req/s=([\d.]+) p50=([\d.]+)ms p90=[\d.]+ms p99=([\d.]+)ms max=[\d.]+ms n=(\d+) errors\(status/other\)=(\d+)/(\d+)`)

// runScenario runs the pairs of one scenario: Worktrack (A) and the
// reference (B) alternate A B, B A, A B, … so that drift in the machine's
// speed hits both sides alike.
func (h *harness) runScenario(ctx context.Context, s scenario) (result, error) {
	r := result{sc: s, newConns: -1}
	wt := h.servers[s.backend]
	wtFile, err := h.pathFile(ctx, s.wt.paths)
	if err != nil {
		return r, err
	}
	secret := h.data.keys[s.key].secret
	if s.hooked {
		secret = h.hooked.secret
	}
	if err := h.smoke(ctx, wt.url, secret, s.wt, wtFile); err != nil {
		return r, fmt.Errorf("worktrack smoke request: %w", err)
	}
	// The other side: the reference, or Worktrack with the unscoped key.
	otherURL, otherSecret, other := h.refURL, "", h.ref
	switch {
	case s.againstUnscoped:
		otherURL, otherSecret, other = wt.url, h.data.secret, wt
	case s.against != "":
		o := h.servers[s.against]
		otherURL, otherSecret, other = o.url, h.data.secret, o
	case s.refGQL:
		otherURL, other = h.refGQLURL, h.refGQL
	}
	var refFile string
	if s.ref != nil {
		if refFile, err = h.pathFile(ctx, s.ref.paths); err != nil {
			return r, err
		}
		if err := h.smoke(ctx, otherURL, otherSecret, *s.ref, refFile); err != nil {
			return r, fmt.Errorf("reference smoke request: %w", err)
		}
	}

	sessionsBefore, sessionsErr := int64(0), error(nil)
	if s.backend == backendPostgres {
		sessionsBefore, sessionsErr = h.sessions(ctx)
	} else {
		sessionsErr = errors.New("not the PostgreSQL backend") // other servers share its database
	}
	rss := sampleRSS(wt.pid())
	if s.hooked {
		h.hookedCreates++ // the smoke request
	}
	runWT := func() error {
		run, err := h.wrk(ctx, wt.url, secret, s.wt.script, wtFile, s.timeout)
		if err != nil {
			return err
		}
		r.wt = append(r.wt, run)
		if err := wt.exited(); err != nil {
			return err
		}
		if s.hooked {
			h.hookedCreates += run.requests - run.non2xx
			r.drain, err = h.settleDeliveries(ctx, s.name)
			return err
		}
		return nil
	}
	runRef := func() error {
		run, err := h.wrk(ctx, otherURL, otherSecret, s.ref.script, refFile, s.timeout)
		if err != nil {
			return err
		}
		r.ref = append(r.ref, run)
		return other.exited()
	}
	for pair := range h.opts.pairs {
		order := []func() error{runWT}
		if s.ref != nil {
			order = append(order, runRef)
			if pair%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
		}
		for _, f := range order {
			if err := f(); err != nil {
				rss.peak()
				return r, err
			}
		}
		w := r.wt[len(r.wt)-1]
		logf("%s pair %d/%d: worktrack %.0f req/s p50 %.2fms p99 %.2fms%s", s.name, pair+1, h.opts.pairs,
			w.reqPerSec, w.p50, w.p99, refLog(r.ref))
		if s.ref != nil {
			b := r.ref[len(r.ref)-1]
			if b.reqPerSec > 0 {
				r.ratios = append(r.ratios, w.reqPerSec*s.wt.units()/(b.reqPerSec*s.ref.units()))
				if s.hooked {
					// wrk's run lasted requests / req/s.
					ran := time.Duration(float64(w.requests) / w.reqPerSec * float64(time.Second))
					r.sent = append(r.sent, float64(w.requests-w.non2xx)/(ran+r.drain).Seconds()/b.reqPerSec)
				}
			}
		}
	}
	r.peakRSS = rss.peak()
	if s.backend == backendPostgres && sessionsErr == nil {
		// Backends report their session to the statistics when they go idle
		// or exit; give the last ones a moment.
		time.Sleep(1500 * time.Millisecond)
		if after, err := h.sessions(ctx); err == nil {
			r.newConns = after - sessionsBefore
		}
	}
	return r, nil
}

// settleDeliveries waits until no delivery is pending and the receiver
// has had one for every create answered in the hooked workspace, so that
// the deliveries a side left behind are not sent while the next side is
// measured (they would slow it, and flatter the side that left them), and
// says how many were still pending when the side ended and how long they
// took. Pending rows, not the answers counted, decide: a create whose
// answer wrk did not wait for still committed its delivery.
func (h *harness) settleDeliveries(ctx context.Context, name string) (time.Duration, error) {
	start := time.Now()
	if h.wtConn == nil {
		c, err := pgx.Connect(ctx, h.wtDSN)
		if err != nil {
			return 0, fmt.Errorf("settle deliveries: %w", err)
		}
		h.wtConn = c
	}
	pending := func() (int64, error) {
		var n int64
		err := h.wtConn.QueryRow(ctx, "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'").Scan(&n)
		return n, err
	}
	backlog, err := pending()
	if err != nil {
		return 0, fmt.Errorf("settle deliveries: %w", err)
	}
	for n := backlog; n > 0 || h.receiver.deliveries.Load() < h.hookedCreates; {
		if time.Since(start) > 2*time.Minute {
			return 0, fmt.Errorf("%s: %d deliveries still pending, the receiver has had %d of at least %d, 2 minutes after the creates ended",
				name, n, h.receiver.deliveries.Load(), h.hookedCreates)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if n, err = pending(); err != nil {
			return 0, fmt.Errorf("settle deliveries: %w", err)
		}
	}
	drain := time.Since(start)
	logf("%s: %d deliveries were pending when the creates ended; sent %s later", name, backlog, drain.Round(time.Millisecond))
	return drain, nil
}

func pairList(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, ", ")
}

func refLog(ref []wrkRun) string {
	if len(ref) == 0 {
		return ""
	}
	b := ref[len(ref)-1]
	return fmt.Sprintf("; reference %.0f req/s p50 %.2fms p99 %.2fms", b.reqPerSec, b.p50, b.p99)
}

// smoke sends the first request of a path file once and fails on a non-2xx
// answer or, for GraphQL, on an answer with errors, so that a scenario never
// measures how fast the server refuses.
func (h *harness) smoke(ctx context.Context, base, token string, t target, file string) error {
	b, err := os.ReadFile(file) //nolint:gosec // our own path file
	if err != nil {
		return err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	method, path, body := "GET", line, ""
	if t.script == "post.lua" {
		method = "POST"
		path, body, _ = strings.Cut(line, "\t")
	}
	resp, err := httpDo(ctx, method, base+path, token, body)
	if err != nil {
		return err
	}
	if strings.HasPrefix(path, "/graphql") && strings.Contains(string(resp), `"errors"`) {
		return fmt.Errorf("POST %s: GraphQL errors: %.300s", path, resp)
	}
	return nil
}

// sessions is pg_stat_database.sessions of the Worktrack database: every
// connection ever opened to it.
func (h *harness) sessions(ctx context.Context) (int64, error) {
	var n int64
	err := h.admin.QueryRow(ctx, `SELECT coalesce(sessions, 0) FROM pg_stat_database WHERE datname = $1`, wtDBName).Scan(&n)
	return n, err
}

// wrk runs the load shape of shared/perf: wrk -t2 -c32 -d… --latency.
func (h *harness) wrk(ctx context.Context, base, token, script, pathFile, timeout string) (wrkRun, error) {
	args := []string{"-t2", "-c32", "-d" + h.opts.duration, "--latency", "-s", filepath.Join(h.root, "tools", "load", script)}
	if timeout != "" {
		args = append(args, "--timeout", timeout)
	}
	cmd := exec.CommandContext(ctx, "wrk", append(args, base)...) //nolint:gosec // fixed program, our own arguments
	cmd.Env = append(os.Environ(), "PATHS="+pathFile, "TOKEN="+token)
	if token != "" {
		// Worktrack's requests come from a page on an allowed origin, so
		// every answer carries its CORS headers, as a dashboard's do.
		cmd.Env = append(cmd.Env, "ORIGIN="+dashboardOrigin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkRun{}, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	m := resultRe.FindStringSubmatch(string(out))
	if m == nil {
		return wrkRun{}, fmt.Errorf("wrk printed no RESULT line:\n%s", out)
	}
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	i := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	return wrkRun{reqPerSec: f(m[1]), p50: f(m[2]), p99: f(m[3]), requests: i(m[4]), non2xx: i(m[5]), socketErrs: i(m[6])}, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianOf(runs []wrkRun, f func(wrkRun) float64) float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return median(xs)
}

func totals(runs []wrkRun) (non2xx, sock, requests int64) {
	for _, r := range runs {
		non2xx += r.non2xx
		sock += r.socketErrs
		requests += r.requests
	}
	return
}

// printTable prints one row per scenario: medians over the pairs.
func printTable(w io.Writer, rows []result, o options) {
	fmt.Fprintf(w, "\nwrk -t2 -c32 -d%s --latency, %d pair(s) interleaved; figures are medians over the pairs; ratio = median of the pair ratios (Worktrack / reference)\n\n", o.duration, o.pairs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tdb\twt req/s\twt p50\twt p99\tref req/s\tref p50\tref p99\tratio\twt peak RSS\tnew db conns\tnon-2xx wt/ref\tsock err wt/ref\t")
	var notes []string
	for _, r := range rows {
		reqs := func(x wrkRun) float64 { return x.reqPerSec }
		p50 := func(x wrkRun) float64 { return x.p50 }
		p99 := func(x wrkRun) float64 { return x.p99 }
		wn, ws, _ := totals(r.wt)
		refCols, ratio, errCols, sockCols := "-\t-\t-", "-", fmt.Sprintf("%d/-", wn), fmt.Sprintf("%d/-", ws)
		if r.sc.ref != nil {
			rn, rs, _ := totals(r.ref)
			refCols = fmt.Sprintf("%.0f\t%.2fms\t%.2fms", medianOf(r.ref, reqs), medianOf(r.ref, p50), medianOf(r.ref, p99))
			ratio = fmt.Sprintf("%.2f", median(r.ratios))
			errCols, sockCols = fmt.Sprintf("%d/%d", wn, rn), fmt.Sprintf("%d/%d", ws, rs)
		}
		conns := "n/a"
		if r.newConns >= 0 {
			conns = strconv.FormatInt(r.newConns, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.2fms\t%.2fms\t%s\t%s\t%.1f MiB\t%s\t%s\t%s\t\n",
			r.sc.name, r.sc.backend, medianOf(r.wt, reqs), medianOf(r.wt, p50), medianOf(r.wt, p99),
			refCols, ratio, float64(r.peakRSS)/1024, conns, errCols, sockCols)
		if r.sc.timeout != "" {
			notes = append(notes, fmt.Sprintf("%s: wrk --timeout %s (default 2s)", r.sc.name, r.sc.timeout))
		}
		switch {
		case r.sc.note != "":
			notes = append(notes, r.sc.name+": "+r.sc.note)
			if len(r.sent) > 0 {
				notes = append(notes, fmt.Sprintf("%s: counting the time the deliveries unsent at the end of each run took to send (creates / (run + that time) against the other side's req/s): %.2f (pairs %s)",
					r.sc.name, median(r.sent), pairList(r.sent)))
			}
		case r.sc.unit != "" && r.sc.ref != nil:
			notes = append(notes, fmt.Sprintf("%s: %s/s Worktrack %.0f (req/s × %.0f) vs reference %.0f (req/s × %.0f); the ratio compares %s/s",
				r.sc.name, r.sc.unit, medianOf(r.wt, reqs)*r.sc.wt.units(), r.sc.wt.units(),
				medianOf(r.ref, reqs)*r.sc.ref.units(), r.sc.ref.units(), r.sc.unit))
		case r.sc.ref == nil:
			notes = append(notes, r.sc.name+": no reference route; absolute figures")
		case r.sc.againstUnscoped:
			notes = append(notes, r.sc.name+": the \"ref\" side is Worktrack itself with the unscoped key; the ratio is scoped / unscoped (target >= 0.95)")
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
	fmt.Fprintln(w, "  reference: ../shared/perf/reference (net/http + pgx, -conns 20) on PostgreSQL, also for the sqlite rows")
	fmt.Fprintln(w, "  non-2xx: wrk's status errors (status >= 400); new db conns: pg_stat_database.sessions delta of the Worktrack database")
}

// failures lists what makes a quick run fail: any error answer, any socket
// error, or a side that served nothing.
func failures(rows []result) []string {
	var bad []string
	for _, r := range rows {
		for side, runs := range map[string][]wrkRun{"worktrack": r.wt, "reference": r.ref} {
			if side == "reference" && r.sc.ref == nil {
				continue
			}
			n, s, req := totals(runs)
			if n > 0 || s > 0 || req == 0 {
				bad = append(bad, fmt.Sprintf("%s %s: %d non-2xx, %d socket errors, %d requests", r.sc.name, side, n, s, req))
			}
		}
	}
	return bad
}
