package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// countingSender counts the attempts one dispatcher makes through the real
// sender.
type countingSender struct {
	inner ports.WebhookSender
	n     atomic.Int64
}

func (c *countingSender) Send(ctx context.Context, a ports.WebhookAttempt) domain.AttemptResult {
	c.n.Add(1)
	return c.inner.Send(ctx, a)
}

// createTasks makes n tasks through the API from a few goroutines and
// returns when all are committed.
func createTasks(tb testing.TB, e *apitest.Env, prj string, n, workers int) {
	tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				res := e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Member.Key, map[string]any{"title": fmt.Sprintf("Task %d", i)})
				if res.Status != http.StatusCreated {
					errs <- string(res.Body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		tb.Fatalf("create task: %s", msg)
	}
}

// Two dispatchers (two processes' pools) on one PostgreSQL database deliver
// 500 events, each at least once, and never send one event to the receiver
// from both at once. Some first attempts fail, so that deliveries are
// claimed again after a retry.
func TestWebhookTwoDispatchersOnePostgres(t *testing.T) {
	url := storetest.PostgresURL(t)
	dbA, dbB := openPostgres(t, url), openPostgres(t, url)
	e := apitest.NewWith(t, dbA, apitest.Settings{AllowPrivateWebhooks: true}, apitestHighLimit)
	const n = 500
	var (
		mu         sync.Mutex
		inFlight   = map[string]int{}
		succeeded  = map[string]bool{}
		duplicates atomic.Int64
	)
	rc := newReceiver(t, func(k int, r *http.Request, _ http.ResponseWriter) int {
		id := r.Header.Get(webhook.HeaderEventID)
		mu.Lock()
		inFlight[id]++
		if inFlight[id] > 1 {
			duplicates.Add(1)
		}
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // an attempt takes a while
		mu.Lock()
		defer mu.Unlock()
		inFlight[id]--
		if k%7 == 0 && r.Header.Get(webhook.HeaderAttempt) == "1" {
			return http.StatusInternalServerError
		}
		succeeded[id] = true
		return http.StatusOK
	})
	opts := app.DispatcherOptions{Policy: testPolicy(30 * time.Second), Workers: 8, PerWorkspace: 8}
	senderA := &countingSender{inner: webhook.NewSender(webhook.SenderOptions{Timeout: 2 * time.Second, AllowPrivate: true})}
	senderB := &countingSender{inner: webhook.NewSender(webhook.SenderOptions{Timeout: 2 * time.Second, AllowPrivate: true})}
	apitest.RunDispatcherOver(t, e, e.App, dbA, senderA, opts)
	apitest.RunDispatcherOver(t, e, appOver(dbB, e.Clock), dbB, senderB, opts)

	w := newWebhook(t, e, rc.URL(), "task.created")
	createTasks(t, e, newProject(t, e, "TWO"), n, 5)

	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		done := len(succeeded)
		mu.Unlock()
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered", done, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := duplicates.Load(); d != 0 {
		t.Fatalf("%d requests arrived while the same event was in flight from the other dispatcher", d)
	}
	var pending int64
	if err := dbA.Gorm().Table("webhook_deliveries").Where("webhook_id = ? AND status <> 'succeeded'", w.Str("id")).Count(&pending).Error; err != nil {
		t.Fatal(err)
	}
	// Every attempt either dispatcher made reached the receiver: none was
	// sent twice.
	a, b := senderA.n.Load(), senderB.n.Load()
	if a == 0 || b == 0 || int(a+b) != len(rc.Requests()) {
		t.Fatalf("attempts: dispatcher A %d, B %d, receiver %d", a, b, len(rc.Requests()))
	}
	t.Logf("%d events: %d attempts by A, %d by B, %d deliveries not yet marked succeeded", n, a, b, pending)
}

// BenchmarkWebhookDelivery: 1,000 task changes on PostgreSQL with one
// subscribed local receiver. Reports deliveries per second (from the first
// change to the last receipt) and the latency from each change's event
// timestamp (taken inside its transaction, just before the commit) to its
// receipt, p50 and p99.
func BenchmarkWebhookDelivery(b *testing.B) {
	e := apitest.NewWith(b, storetest.Postgres(b), apitest.Settings{AllowPrivateWebhooks: true}, apitestHighLimit)
	rc := newReceiver(b, nil)
	e.RunDispatcher(b, app.DispatcherOptions{
		Policy: domain.RetryPolicy{Base: 10 * time.Second, Max: 2 * time.Hour, Window: 24 * time.Hour, Jitter: domain.EqualJitter},
	})
	// The env's clock runs at a fixed offset from the wall clock.
	offset := time.Until(e.Clock.Now())
	newWebhook(b, e, rc.URL(), "task.created")
	const changes = 1000
	var rates, p50s, p99s []float64
	for b.Loop() {
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Bench", "key": fmt.Sprintf("B%d", len(rates))}).Str("id")
		before := len(rc.Requests())
		start := time.Now()
		createTasks(b, e, prj, changes, 8)
		got := rc.WaitFor(before + changes)[before:]
		lat := make([]float64, 0, len(got))
		last := start
		for _, r := range got {
			var p struct {
				CreatedAt time.Time `json:"created_at"`
			}
			if err := json.Unmarshal(r.Body, &p); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, float64(r.At.Sub(p.CreatedAt.Add(-offset)).Microseconds())/1000)
			if r.At.After(last) {
				last = r.At
			}
		}
		slices.Sort(lat)
		rates = append(rates, changes/last.Sub(start).Seconds())
		p50s = append(p50s, lat[len(lat)/2])
		p99s = append(p99s, lat[len(lat)*99/100])
	}
	b.ReportMetric(mean(rates), "deliveries/s")
	b.ReportMetric(mean(p50s), "p50-ms")
	b.ReportMetric(mean(p99s), "p99-ms")
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// A dead receiver (every attempt hangs until the timeout) holds at most its
// per-webhook share of the workers: another webhook's delivery goes out at
// once, behind a backlog of the dead one's.
func TestWebhookSlowReceiverKeepsToItsShare(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		var slowInFlight, slowMax, slowDone atomic.Int64
		release := make(chan struct{})
		slow := newReceiver(t, func(_ int, r *http.Request, _ http.ResponseWriter) int {
			n := slowInFlight.Add(1)
			defer slowInFlight.Add(-1)
			defer slowDone.Add(1)
			for m := slowMax.Load(); n > m; m = slowMax.Load() {
				if slowMax.CompareAndSwap(m, n) {
					break
				}
			}
			// Hangs until the test ends: every worker given to this
			// receiver stays busy for the whole test.
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return http.StatusOK
		})
		fast := newReceiver(t, nil)
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(time.Minute), Timeout: time.Minute, Workers: 4, PerWebhook: 2, PerWorkspace: 4})
		// Registered after the dispatcher, so it runs before the dispatcher's
		// stop waits for the attempts in flight.
		t.Cleanup(func() { close(release) })
		newWebhook(t, e, slow.URL(), "task.created")
		prj := newProject(t, e, "SLW")
		createTasks(t, e, prj, 20, 4)
		slow.WaitFor(2)
		newWebhook(t, e, fast.URL(), "project.created")
		newProject(t, e, "FST")
		// The healthy receiver is served while every slow attempt is still
		// hanging: the dead receiver did not take the whole pool.
		fast.WaitFor(1)
		if done := slowDone.Load(); done != 0 {
			t.Fatalf("%d slow attempts ended before the healthy delivery; the test proves nothing", done)
		}
		if m := slowMax.Load(); m > 2 {
			t.Fatalf("the dead receiver held %d workers at once; its share is 2", m)
		}
	})
}

// On shutdown the dispatcher stops claiming, lets the attempt in flight
// finish and records it before Run returns.
func TestWebhookDispatcherShutdown(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.Clock.Run()
		rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int {
			time.Sleep(300 * time.Millisecond)
			return http.StatusOK
		})
		w := newWebhook(t, e, rc.URL(), "project.created")
		d := app.NewDispatcher(e.App.DispatcherDeps(webhook.NewSender(webhook.SenderOptions{Timeout: 2 * time.Second, AllowPrivate: true}), db),
			app.DispatcherOptions{Policy: testPolicy(time.Minute), Timeout: 2 * time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = d.Run(ctx)
		}()
		newProject(t, e, "SHT")
		rc.WaitFor(1)
		cancel() // SIGTERM, while the attempt is in flight
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
		ds := deliveries(t, e, w.Str("id"), "")
		if len(ds) != 1 || ds[0]["status"] != "succeeded" || ds[0]["attempts"] != 1.0 {
			t.Fatalf("the attempt in flight at shutdown was not finished and recorded: %v", ds)
		}
		newProject(t, e, "AFT")
		time.Sleep(200 * time.Millisecond) // a stopped dispatcher claims nothing
		if ds := deliveries(t, e, w.Str("id"), "&status=pending"); len(ds) != 1 || len(rc.Requests()) != 1 {
			t.Fatalf("a stopped dispatcher sent: %d requests, pending %v", len(rc.Requests()), ds)
		}
	})
}

// BenchmarkWebhookBacklogDrain: the dispatcher alone. 1,000 task changes are
// committed while no dispatcher runs; then one starts, and the benchmark
// reports how fast it drains the backlog to one local receiver on
// PostgreSQL.
func BenchmarkWebhookBacklogDrain(b *testing.B) {
	e := apitest.NewWith(b, storetest.Postgres(b), apitest.Settings{AllowPrivateWebhooks: true}, apitestHighLimit)
	e.Clock.Run()
	rc := newReceiver(b, nil)
	newWebhook(b, e, rc.URL(), "task.created")
	sender := webhook.NewSender(webhook.SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	const changes = 1000
	var rates []float64
	for b.Loop() {
		b.StopTimer()
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Drain", "key": fmt.Sprintf("D%d", len(rates))}).Str("id")
		before := len(rc.Requests())
		createTasks(b, e, prj, changes, 8)
		b.StartTimer()
		d := app.NewDispatcher(e.App.DispatcherDeps(sender, e.DB), app.DispatcherOptions{
			Policy:  domain.RetryPolicy{Base: 10 * time.Second, Max: 2 * time.Hour, Window: 24 * time.Hour},
			Timeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler),
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(done)
			_ = d.Run(ctx)
		}()
		rc.WaitFor(before + changes)
		rates = append(rates, changes/time.Since(start).Seconds())
		cancel()
		<-done
	}
	b.ReportMetric(mean(rates), "deliveries/s")
}
