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
}

// measureB runs B's steady load for the duration: REST reads at a fixed
// rate (open loop: a slow answer does not delay the next request, and
// latency counts from when a request was due), and tasks created at a
// fixed rate, whose deliveries the fast receiver times.
func measureB(ctx context.Context, c loadkit.Client, t bTarget) phase {
	p := phase{restErrs: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(*flagDuration)
	createdc := make(chan []string, 1)
	go func() { createdc <- createTasks(ctx, c, t, end) }()
	interval := time.Second / time.Duration(*flagRate)
	for i, due := 0, time.Now(); due.Before(end); i, due = i+1, due.Add(interval) {
		time.Sleep(time.Until(due))
		path := "/v1/tasks/" + t.tasks[i%len(t.tasks)]
		if i%2 == 1 {
			path = "/v1/projects/" + t.project + "/tasks?limit=20"
		}
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
	t.rc.waitFor(len(created), 15*time.Second)
	for _, id := range created {
		if d, ok := t.rc.latency(id); ok {
			p.hook = append(p.hook, d)
		} else {
			p.hookLost++
		}
	}
	return p
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

// waitFor waits, up to limit, until n or more deliveries have arrived.
func (rc *receiver) waitFor(n int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		rc.mu.Lock()
		got := len(rc.seen)
		rc.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// report prints the table and the targets, and says whether B saw no
// error beside A.
func report(w io.Writer, alone, with phase, a *attacks, peak int64) (r struct{ noErrors bool }) {
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
	fmt.Fprintln(w, "\nneighbours: tenant B alone, then beside tenant A (same run, same server)")
	fmt.Fprintln(w, "| B's | alone p50 | alone p99 | with A p50 | with A p99 | ratio p99 | errors alone | errors with A |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	restRatio := ratio(loadkit.Percentile(with.rest, .99), loadkit.Percentile(alone.rest, .99))
	hookRatio := ratio(loadkit.Percentile(with.hook, .99), loadkit.Percentile(alone.hook, .99))
	fmt.Fprintf(w, "| REST reads (%d/s) | %s | %s | %s | %s | %.2fx | %s | %s |\n", *flagRate,
		ms(loadkit.Percentile(alone.rest, .5)), ms(loadkit.Percentile(alone.rest, .99)),
		ms(loadkit.Percentile(with.rest, .5)), ms(loadkit.Percentile(with.rest, .99)), restRatio, errs(alone), errs(with))
	fmt.Fprintf(w, "| webhook commit-to-receipt (%d/s) | %s | %s | %s | %s | %.2fx | %d of %d lost | %d of %d lost |\n", *flagWrites,
		ms(loadkit.Percentile(alone.hook, .5)), ms(loadkit.Percentile(alone.hook, .99)),
		ms(loadkit.Percentile(with.hook, .5)), ms(loadkit.Percentile(with.hook, .99)), hookRatio,
		alone.hookLost, alone.creations, with.hookLost, with.creations)
	fmt.Fprintf(w, "\nA's attacks were answered: bad keys from B's address: %s; expensive GraphQL: %s; sockets: %s\n",
		a.badKeys.String(), a.graphql.String(), a.sockets.String())
	fmt.Fprintf(w, "A's searches and counts: %s\n", a.searches.String())
	fmt.Fprintf(w, "server peak RSS: %.1f MB\n", float64(peak)/1e6)
	r.noErrors = len(with.restErrs) == 0 && with.hookLost == 0
	fmt.Fprintf(w, "\ntargets: B sees no 429 and no 5xx: %s; REST p99 within 1.5x of alone: %s (%.2fx); webhook p99 within 2x: %s (%.2fx); RSS under 150 MB: %s (%.1f MB)\n",
		holds(r.noErrors), holds(restRatio <= 1.5), restRatio, holds(hookRatio <= 2), hookRatio, holds(peak < 150e6), float64(peak)/1e6)
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
