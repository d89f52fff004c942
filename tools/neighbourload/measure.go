package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/worktrack/worktrack/tools/loadkit"
)

// phase is what B saw in one phase.
type phase struct {
	rest      []time.Duration // latency of each REST request, from when it was due
	restErrs  map[int]int     // REST answers that were not 2xx, by status (0: no answer)
	hook      []time.Duration // each created task's commit-to-receipt latency
	hookLost  int             // created tasks whose delivery did not arrive
	requests  int
	creations int
	created   []string // the tasks B created, whose deliveries collect times
}

// measureB runs B's steady load for the duration: REST reads at a fixed
// rate (open loop: a slow answer does not delay the next request, and
// latency counts from when a request was due), and tasks created at a
// fixed rate, whose deliveries the fast receiver times.
func measureB(ctx context.Context, readers []loadkit.Client, writer loadkit.Client, t bTarget) phase {
	p := phase{restErrs: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(*flagDuration)
	createdc := make(chan []string, 1)
	go func() { createdc <- createTasks(ctx, writer, t, end) }()
	interval := time.Second / time.Duration(*flagRate)
	for i, due := 0, time.Now(); due.Before(end); i, due = i+1, due.Add(interval) {
		time.Sleep(time.Until(due))
		path := "/v1/tasks/" + t.tasks[i%len(t.tasks)]
		if i%2 == 1 {
			path = "/v1/projects/" + t.project + "/tasks?limit=20"
		}
		c := readers[i%len(readers)]
		wg.Add(1)
		go func(due time.Time) {
			defer wg.Done()
			status, _, err := c.Do(ctx, http.MethodGet, path, nil)
			took := time.Since(due)
			mu.Lock()
			defer mu.Unlock()
			p.requests++
			p.rest = append(p.rest, took)
			if err != nil {
				status = 0
			}
			if status/100 != 2 {
				p.restErrs[status]++
			}
		}(due)
	}
	created := <-createdc
	wg.Wait()
	p.creations = len(created)
	p.created = created
	return p
}

// collect waits, up to limit, for the deliveries of the tasks B created,
// and records each one's latency; a delivery that is late is counted at
// its lateness, and one that has not arrived by then is lost.
func (p *phase) collect(rc *receiver, limit time.Duration) {
	rc.waitFor(p.created, limit)
	for _, id := range p.created {
		if d, ok := rc.latency(id); ok {
			p.hook = append(p.hook, d)
		} else {
			p.hookLost++
		}
	}
}

// createTasks creates B's tasks at flagWrites a second until end, and
// returns their ids.
func createTasks(ctx context.Context, c loadkit.Client, t bTarget, end time.Time) []string {
	var ids []string
	interval := time.Second / time.Duration(*flagWrites)
	for due := time.Now(); due.Before(end); due = due.Add(interval) {
		time.Sleep(time.Until(due))
		task, err := c.Post(ctx, "/v1/projects/"+t.project+"/tasks", map[string]any{"title": "Steady"})
		if err == nil {
			ids = append(ids, task["id"].(string))
		}
	}
	return ids
}

// receiver is B's fast webhook receiver: it answers 200 at once and keeps
// each task.created's latency from the event's time (taken in the
// transaction, just before the commit) to its receipt.
type receiver struct {
	mu   sync.Mutex
	seen map[string]time.Duration // by task id
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	var e struct {
		CreatedAt time.Time `json:"created_at"`
		Data      struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &e) == nil {
		rc.mu.Lock()
		if _, dup := rc.seen[e.Data.ID]; !dup {
			rc.seen[e.Data.ID] = at.Sub(e.CreatedAt)
		}
		rc.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

func (rc *receiver) latency(taskID string) (time.Duration, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	d, ok := rc.seen[taskID]
	return d, ok
}

// waitFor waits, up to limit, until the deliveries of every task in ids
// have arrived.
func (rc *receiver) waitFor(ids []string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		rc.mu.Lock()
		missing := slices.ContainsFunc(ids, func(id string) bool { _, ok := rc.seen[id]; return !ok })
		rc.mu.Unlock()
		if !missing {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// report prints the tables and the targets, and says whether B saw no
// error beside A.
func report(w io.Writer, backend string, alone, with phase, a floodReport, peak int64, phAlone, phWith phaseTimes, aAlone, aWith float64) (r struct{ noErrors bool }) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	errs := func(p phase) string {
		if len(p.restErrs) == 0 {
			return "none"
		}
		var parts []string
		for _, s := range sortedKeys(p.restErrs) {
			parts = append(parts, fmt.Sprintf("%d×%d", p.restErrs[s], s))
		}
		return fmt.Sprint(parts)
	}
	fmt.Fprintf(w, "\nneighbours on %s: tenant B alone, then beside tenant A (same run, same server)\n", backend)
	fmt.Fprintln(w, "| B's | samples alone / with A | alone p50 | alone p99 | with A p50 | with A p99 | ratio p99 | errors alone | errors with A |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	restRatio := ratio(loadkit.Percentile(with.rest, .99), loadkit.Percentile(alone.rest, .99))
	hookRatio := ratio(loadkit.Percentile(with.hook, .99), loadkit.Percentile(alone.hook, .99))
	fmt.Fprintf(w, "| REST reads (%d/s) | %d / %d | %s | %s | %s | %s | %.2fx | %s | %s |\n", *flagRate, len(alone.rest), len(with.rest),
		ms(loadkit.Percentile(alone.rest, .5)), ms(loadkit.Percentile(alone.rest, .99)),
		ms(loadkit.Percentile(with.rest, .5)), ms(loadkit.Percentile(with.rest, .99)), restRatio, errs(alone), errs(with))
	fmt.Fprintf(w, "| webhook commit-to-receipt (%d/s) | %d / %d | %s | %s | %s | %s | %.2fx | %d of %d lost | %d of %d lost |\n", *flagWrites,
		len(alone.hook), len(with.hook),
		ms(loadkit.Percentile(alone.hook, .5)), ms(loadkit.Percentile(alone.hook, .99)),
		ms(loadkit.Percentile(with.hook, .5)), ms(loadkit.Percentile(with.hook, .99)), hookRatio,
		alone.hookLost, alone.creations, with.hookLost, with.creations)
	fmt.Fprintf(w, "\nwhere B's REST reads spent their time, from the server's access log (p50 / p99 of each phase; other = the server's own work and its wait for a CPU; outside = before the server's first middleware and after its last, as the client saw it):\n")
	fmt.Fprintln(w, "| phase | lines | server total | queued for seats | holding seats (statements) | other | outside |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	clientP := func(p phase, q float64) time.Duration { return loadkit.Percentile(p.rest, q) }
	for _, x := range []struct {
		name string
		t    phaseTimes
		p    phase
	}{{"alone", phAlone, alone}, {"with A", phWith, with}} {
		pq := func(ds []time.Duration) string {
			return ms(loadkit.Percentile(ds, .5)) + " / " + ms(loadkit.Percentile(ds, .99))
		}
		outside := []time.Duration{
			max(clientP(x.p, .5)-loadkit.Percentile(x.t.total, .5), 0),
			max(clientP(x.p, .99)-loadkit.Percentile(x.t.total, .99), 0),
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s / %s |\n", x.name, len(x.t.total), pq(x.t.total), pq(x.t.queued), pq(x.t.db), pq(x.t.other),
			ms(outside[0]), ms(outside[1]))
	}
	fmt.Fprintf(w, "\nA's costly reads and bulk creations answered 2xx: %.1f/s alone, %.1f/s beside B\n", aAlone, aWith)
	fmt.Fprintf(w, "A's attacks were answered: bad keys from B's address: %s; expensive GraphQL: %s; sockets: %s\n",
		a.BadKeys, a.GraphQL, a.Sockets)
	fmt.Fprintf(w, "A's searches, counts and bulk creations: %s\n", a.Searches)
	fmt.Fprintf(w, "server peak RSS: %.1f MB\n", float64(peak)/1e6)
	r.noErrors = len(with.restErrs) == 0 && with.hookLost == 0
	fmt.Fprintf(w, "\ntargets on %s: B sees no 429 and no 5xx: %s; REST p99 within 3x of alone: %s (%.2fx); webhook p99 within 2x: %s (%.2fx); RSS under 150 MB: %s (%.1f MB)\n",
		backend, holds(r.noErrors), holds(restRatio <= 3), restRatio, holds(hookRatio <= 2), hookRatio, holds(peak < 150e6), float64(peak)/1e6)
	return r
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func holds(ok bool) string {
	if ok {
		return "holds"
	}
	return "DOES NOT HOLD"
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
