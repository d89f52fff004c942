package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// These tests run the dispatcher's scheduling on fakes of its ports: a
// store that hands out due deliveries, a sender the test holds or answers,
// and a clock whose timers fire only when the test advances it. The
// stores' own suites run on real databases (adapters/store); here
// only the dispatcher's decisions are under test. Nothing waits on the wall
// clock for an answer: a dispatcher that never does what a test waits for
// makes the test hang until go test's -timeout, whose goroutine dump shows
// the wait.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeClock is a clock whose timers fire when Advance reaches them. asked
// receives every wait the dispatcher starts.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
	asked  chan time.Duration
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: t0, asked: make(chan time.Duration, 4096)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	if d <= 0 {
		// As time.After: a wait that is already over ends at once. (The
		// dispatcher asks for one when a retry fell due while it was busy.)
		ch <- c.now
	} else {
		c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), c: ch})
	}
	c.mu.Unlock()
	select {
	case c.asked <- d:
	default:
	}
	return ch
}

// Advance moves the clock and fires every timer it reaches.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(c.now) {
			kept = append(kept, tm)
			continue
		}
		tm.c <- c.now
	}
	c.timers = kept
}

// fakeDeliveries keeps deliveries in memory with the claim semantics of
// ports.DeliveryStore: due, pending, not leased, not of a skipped webhook,
// oldest first. Methods the dispatcher does not call panic (nil embedded
// interface).
type fakeDeliveries struct {
	ports.DeliveryStore

	mu       sync.Mutex
	rows     []*fakeRow
	claims   []ports.ClaimRequest
	released []string

	// finishFailures makes that many FinishDeliveries calls fail, as on a
	// broken connection; finishCalls counts the calls.
	finishFailures int
	finishCalls    int

	claimed  chan ports.ClaimRequest
	finished chan domain.Delivery
	failed   chan string // webhook ids whose pending deliveries were failed
}

type fakeRow struct {
	d      domain.Delivery
	leased bool
}

func newFakeDeliveries() *fakeDeliveries {
	return &fakeDeliveries{
		claimed: make(chan ports.ClaimRequest, 4096), finished: make(chan domain.Delivery, 4096), failed: make(chan string, 16),
	}
}

// add stores a pending delivery of webhookID due at due.
func (s *fakeDeliveries) add(id, webhookID string, due time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := domain.Delivery{
		ID: id, WorkspaceID: "wsp_1", WebhookID: webhookID, EventID: "evt_" + id, EventType: domain.EventTaskCreated,
		Status: domain.DeliveryPending, NextAttemptAt: &due, WindowStart: t0, CreatedAt: t0,
	}
	s.rows = append(s.rows, &fakeRow{d: d})
}

func (s *fakeDeliveries) ClaimDeliveries(_ context.Context, r ports.ClaimRequest) ([]ports.Dispatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims = append(s.claims, r)
	var out []ports.Dispatch
	for _, row := range s.rows {
		if len(out) == r.Limit {
			break
		}
		d := row.d
		if row.leased || d.Status != domain.DeliveryPending || d.NextAttemptAt.After(r.Now) || slices.Contains(r.SkipWebhooks, d.WebhookID) {
			continue
		}
		row.leased = true
		out = append(out, ports.Dispatch{Delivery: d, URL: hookURL(d.WebhookID), Secret: "whsec_x", Payload: []byte(`{}`)})
	}
	s.claimed <- r
	return out, nil
}

func (s *fakeDeliveries) FinishDelivery(_ context.Context, d domain.Delivery, _ string) (bool, error) {
	s.mu.Lock()
	for _, row := range s.rows {
		if row.d.ID == d.ID {
			row.d, row.leased = d, false
		}
	}
	s.mu.Unlock()
	s.finished <- d
	return true, nil
}

func (s *fakeDeliveries) FinishDeliveries(ctx context.Context, owner string, outs []domain.Outcome) (int64, []domain.FailureSpan, error) {
	s.mu.Lock()
	s.finishCalls++
	fail := s.finishFailures > 0
	if fail {
		s.finishFailures--
	}
	s.mu.Unlock()
	if fail {
		return 0, nil, errors.New("driver: bad connection")
	}
	for _, o := range outs {
		if _, err := s.FinishDelivery(ctx, o.Delivery, owner); err != nil {
			return 0, nil, err
		}
	}
	return int64(len(outs)), nil, nil
}

func (s *fakeDeliveries) ReleaseDeliveries(_ context.Context, _ string, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = append(s.released, ids...)
	for _, row := range s.rows {
		if slices.Contains(ids, row.d.ID) {
			row.leased = false
		}
	}
	return nil
}

func (s *fakeDeliveries) FailPendingDeliveries(_ context.Context, _, webhookID, reason string) (int64, error) {
	s.mu.Lock()
	var n int64
	for _, row := range s.rows {
		if row.d.WebhookID == webhookID && row.d.Status == domain.DeliveryPending {
			row.d, row.leased = row.d.Fail(reason), false
			n++
		}
	}
	s.mu.Unlock()
	s.failed <- webhookID
	return n, nil
}

func (s *fakeDeliveries) get(id string) domain.Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, row := range s.rows {
		if row.d.ID == id {
			return row.d
		}
	}
	return domain.Delivery{}
}

// fakeWebhooks serves the 410 path: find the webhook for update, write it.
type fakeWebhooks struct {
	ports.WebhookStore

	mu    sync.Mutex
	hooks map[string]domain.Webhook
}

func (s *fakeWebhooks) FindWebhookByIDForUpdate(_ context.Context, _, id string) (domain.Webhook, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.hooks[id]
	if !ok {
		return domain.Webhook{}, domain.NotFound("webhook", id)
	}
	return w, nil
}

func (s *fakeWebhooks) FindWebhookByID(ctx context.Context, workspaceID, id string) (domain.Webhook, error) {
	return s.FindWebhookByIDForUpdate(ctx, workspaceID, id)
}

func (s *fakeWebhooks) UpdateWebhook(_ context.Context, w domain.Webhook) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[w.ID] = w
	return nil
}

// subscribers are the active webhooks of the workspace subscribed to t,
// sorted, as the store's CreateEvents returns them.
func (s *fakeWebhooks) subscribers(workspaceID string, t domain.EventType) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, w := range s.hooks {
		if w.WorkspaceID == workspaceID && w.Active && w.Subscribes(t) {
			out = append(out, w.ID)
		}
	}
	slices.Sort(out)
	return out
}

// fakeEventLog records the events the dispatcher logs, and answers their
// subscribers from hooks.
type fakeEventLog struct {
	ports.EventStore
	hooks *fakeWebhooks

	mu     sync.Mutex
	events []domain.Event
}

func (l *fakeEventLog) CreateEvents(_ context.Context, es []domain.Event, _ [][]byte) ([][]string, error) {
	subs := make([][]string, len(es))
	for i, e := range es {
		subs[i] = l.hooks.subscribers(e.WorkspaceID, e.Type)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, es...)
	return subs, nil
}

type fakePayloads struct{}

func (fakePayloads) RenderEvent(domain.Event) ([]byte, error) { return []byte(`{}`), nil }

// fakeAudit keeps audit records in memory: the webhooks the dispatcher
// disables are recorded.
type fakeAudit struct {
	mu      sync.Mutex
	heads   map[string]domain.AuditHead
	records []domain.AuditEvent
}

func (f *fakeAudit) LockAuditHead(_ context.Context, ws string) (domain.AuditHead, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.heads == nil {
		f.heads = map[string]domain.AuditHead{}
	}
	h, ok := f.heads[ws]
	if !ok {
		h = domain.AuditHead{WorkspaceID: ws}
	}
	return h, nil
}

func (f *fakeAudit) AppendAudit(_ context.Context, e domain.AuditEvent, head domain.AuditHead) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, e)
	f.heads[head.WorkspaceID] = head
	return nil
}

func (f *fakeAudit) FindAuditEvents(context.Context, ports.AuditFilter) ([]domain.AuditEvent, error) {
	return nil, nil
}

func (f *fakeAudit) LastAuditFor(context.Context, string, domain.AuditAction, string) (time.Time, error) {
	return time.Time{}, nil
}

func (f *fakeAudit) AuditHeads(context.Context, string) ([]domain.AuditHead, error) { return nil, nil }

func (f *fakeAudit) ReadAuditChain(context.Context, string, int64, int) ([]domain.AuditEvent, error) {
	return nil, nil
}

func (f *fakeAudit) PruneAudit(context.Context, time.Time, int) (int, error) { return 0, nil }

type fakeTx struct{}

func (fakeTx) InTx(ctx context.Context, fn func(ctx context.Context) error) error { return fn(ctx) }

// silentWatcher is a database without notifications: its channel only
// closes.
type silentWatcher struct{}

func (silentWatcher) WatchDeliveries(ctx context.Context) (<-chan struct{}, error) {
	c := make(chan struct{})
	go func() { <-ctx.Done(); close(c) }()
	return c, nil
}

func hookURL(webhookID string) string { return "https://" + webhookID + ".test/" }

func hookOf(a ports.WebhookAttempt) string {
	return strings.TrimSuffix(strings.TrimPrefix(a.URL, "https://"), ".test/")
}

// fakeSender records concurrency. hold, when set, returns a channel the
// attempt waits on before answering; answer gives the result (200 if nil).
type fakeSender struct {
	hold   func(ports.WebhookAttempt) <-chan struct{}
	answer func(ports.WebhookAttempt) domain.AttemptResult

	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	perHook     map[string]int
	maxPerHook  map[string]int
	started     chan ports.WebhookAttempt
}

func newFakeSender() *fakeSender {
	return &fakeSender{perHook: map[string]int{}, maxPerHook: map[string]int{}, started: make(chan ports.WebhookAttempt, 4096)}
}

func (s *fakeSender) Send(_ context.Context, a ports.WebhookAttempt) domain.AttemptResult {
	hook := hookOf(a)
	s.mu.Lock()
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.perHook[hook]++
	s.maxPerHook[hook] = max(s.maxPerHook[hook], s.perHook[hook])
	s.mu.Unlock()
	s.started <- a
	if s.hold != nil {
		if c := s.hold(a); c != nil {
			<-c
		}
	}
	s.mu.Lock()
	s.inFlight--
	s.perHook[hook]--
	s.mu.Unlock()
	if s.answer != nil {
		return s.answer(a)
	}
	return domain.AttemptResult{StatusCode: 200}
}

// peaks are the most attempts seen in flight at once, in all and per
// webhook.
func (s *fakeSender) peaks() (all int, perHook map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight, maps.Clone(s.maxPerHook)
}

type dispatchRig struct {
	d        *app.Dispatcher
	wake     *app.Signal // what a local commit notifies
	clock    *fakeClock
	store    *fakeDeliveries
	webhooks *fakeWebhooks
	sender   *fakeSender
	events   *fakeEventLog
}

func newRig() *dispatchRig {
	hooks := &fakeWebhooks{hooks: map[string]domain.Webhook{}}
	return &dispatchRig{
		wake: app.NewSignal(), clock: newFakeClock(), store: newFakeDeliveries(), sender: newFakeSender(),
		webhooks: hooks, events: &fakeEventLog{hooks: hooks},
	}
}

// run starts a dispatcher over the rig; stop cancels it and returns a
// channel closed when Run has returned.
func (r *dispatchRig) run(t *testing.T, o app.DispatcherOptions) (stop func() <-chan struct{}) {
	t.Helper()
	o.Logger = slog.New(slog.DiscardHandler)
	o.PollInterval = time.Hour // only the test's Advance fires a timer
	if o.Policy.Base == 0 {
		o.Policy = domain.RetryPolicy{Base: time.Minute, Max: 10 * time.Minute, Window: time.Hour}
	}
	d := app.NewDispatcher(app.DispatcherDeps{
		Tx: fakeTx{}, Deliveries: r.store, Webhooks: r.webhooks, Sender: r.sender, Watcher: silentWatcher{},
		Wake: r.wake, Clock: r.clock, After: r.clock.After,
		EventLog: r.events, Payloads: fakePayloads{}, IDs: app.RandomIDs{}, Logged: app.NewSignal(), Audit: &fakeAudit{},
	}, o)
	r.d = d
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	stopped := false
	stop = func() <-chan struct{} {
		if !stopped {
			stopped = true
			cancel()
		}
		return done
	}
	t.Cleanup(func() { <-stop() })
	return stop
}

// The worker pool bounds the attempts in flight: with 3 workers and 7 due
// deliveries (each to its own webhook, so the per-webhook cap plays no
// part), never more than 3 attempts run at once and no claim asks for more
// than the free workers; all 7 are still made.
func TestDispatcherNeverRunsMoreThanWorkers(t *testing.T) {
	r := newRig()
	const workers, total = 3, 7
	for i := range total {
		r.store.add("whd_"+string(rune('a'+i)), "whk_"+string(rune('a'+i)), t0)
	}
	release := make(chan struct{})
	r.sender.hold = func(ports.WebhookAttempt) <-chan struct{} { return release }
	stop := r.run(t, app.DispatcherOptions{Workers: workers, PerWebhook: workers, PerWorkspace: workers})
	t.Cleanup(func() { close(release) }) // runs before the rig's stop: a failed test does not hang

	for range workers {
		<-r.sender.started
	}
	// Let the attempts finish one at a time; each freed worker takes the
	// next due delivery.
	for range total {
		release <- struct{}{}
	}
	for range total {
		if d := <-r.store.finished; d.Status != domain.DeliverySucceeded {
			t.Fatalf("delivery %s: %s", d.ID, d.Status)
		}
	}
	<-stop()
	all, _ := r.sender.peaks()
	if all != workers {
		t.Fatalf("%d attempts were in flight at once, want at most (and, with 7 due, exactly) %d", all, workers)
	}
	for _, c := range r.store.claims {
		if c.Limit < 1 || c.Limit > workers {
			t.Fatalf("a claim asked for %d deliveries with %d workers", c.Limit, workers)
		}
	}
}

// A slow webhook holds at most PerWebhook workers: its deliveries over the
// cap (3 here) are released at once for any dispatcher to take, later
// claims skip it while it is at the cap, and another webhook's deliveries
// go out while it is stuck.
func TestDispatcherCapsASlowWebhook(t *testing.T) {
	r := newRig()
	for i := range 5 {
		r.store.add("whd_slow"+string(rune('a'+i)), "whk_slow", t0) // oldest: claimed first
	}
	for i := range 3 {
		r.store.add("whd_fast"+string(rune('a'+i)), "whk_fast", t0)
	}
	slow := make(chan struct{})
	unblock := sync.OnceFunc(func() { close(slow) })
	r.sender.hold = func(a ports.WebhookAttempt) <-chan struct{} {
		if hookOf(a) == "whk_slow" {
			return slow
		}
		return nil
	}
	stop := r.run(t, app.DispatcherOptions{Workers: 8, PerWebhook: 3, PerWorkspace: 8})
	t.Cleanup(unblock)

	for range 3 {
		if d := <-r.store.finished; d.WebhookID != "whk_fast" {
			t.Fatalf("%s finished while the slow webhook was held", d.ID)
		}
	}
	for c := range r.store.claimed {
		if slices.Contains(c.SkipWebhooks, "whk_slow") {
			break // a claim made while the slow webhook is at its cap skips it
		}
	}
	r.store.mu.Lock()
	released := slices.Clone(r.store.released)
	r.store.mu.Unlock()
	if len(released) != 2 || !allPrefixed(released, "whd_slow") {
		t.Fatalf("released %v, want the 2 slow deliveries over the cap", released)
	}

	for n := 0; n < 3; {
		if a := <-r.sender.started; hookOf(a) == "whk_slow" {
			n++ // the cap's worth of slow attempts are in flight
		}
	}
	unblock()
	for n := 0; n < 5; {
		if d := <-r.store.finished; d.WebhookID == "whk_slow" {
			n++
		}
	}
	<-stop()
	if _, per := r.sender.peaks(); per["whk_slow"] != 3 {
		t.Fatalf("%d attempts to the slow webhook at once, want the cap, 3", per["whk_slow"])
	}
}

func allPrefixed(ids []string, prefix string) bool {
	for _, id := range ids {
		if !strings.HasPrefix(id, prefix) {
			return false
		}
	}
	return true
}

// A retry the dispatcher scheduled wakes it when it falls due, not at the
// next poll: after a 500 it waits exactly the backoff (1 minute here, the
// poll being an hour), and advancing the clock by that much brings the
// second attempt.
func TestDispatcherWakesForTheRetryItScheduled(t *testing.T) {
	r := newRig()
	r.store.add("whd_1", "whk_1", t0)
	r.sender.answer = func(a ports.WebhookAttempt) domain.AttemptResult {
		if a.Attempt == 1 {
			return domain.AttemptResult{StatusCode: 500}
		}
		return domain.AttemptResult{StatusCode: 204}
	}
	stop := r.run(t, app.DispatcherOptions{Workers: 2, PerWorkspace: 2})

	first := <-r.store.finished
	if first.Status != domain.DeliveryPending || !first.NextAttemptAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after a 500: %+v", first)
	}
	for d := range r.clock.asked {
		if d == time.Minute {
			break // the dispatcher sleeps until the retry is due
		}
	}
	r.clock.Advance(time.Minute)
	if a := <-r.sender.started; a.Attempt != 1 {
		t.Fatalf("first send was attempt %d", a.Attempt)
	}
	// A wait the dispatcher computed just before the jump and started just
	// after it ends a minute after the jump (as a real timer would after a
	// minute's descheduling): advance past such waits too, but never by
	// the poll's hour, which would bring the retry without its own wake.
	for second := false; !second; {
		select {
		case a := <-r.sender.started:
			if a.Attempt != 2 {
				t.Fatalf("the retry was attempt %d", a.Attempt)
			}
			second = true
		case d := <-r.clock.asked:
			if d <= time.Minute {
				r.clock.Advance(d)
			}
		}
	}
	if second := <-r.store.finished; second.Status != domain.DeliverySucceeded || second.Attempts != 2 {
		t.Fatalf("after the retry: %+v", second)
	}
	<-stop()
}

// Under a stream of commits, claims and outcome writes each wait out the
// pace since the last: a commit right after a claim is claimed for a pace
// later, not at once, and the outcome of its attempt is written a pace
// after the previous write. (Pace is two hours here, the poll one, and
// only the test's Advance ends a wait.)
func TestDispatcherPacesClaimsAndOutcomeWrites(t *testing.T) {
	r := newRig()
	r.store.add("whd_1", "whk_1", t0)
	const pace = 2 * time.Hour
	r.run(t, app.DispatcherOptions{Workers: 4, PerWorkspace: 4, Pace: pace,
		// A window longer than the waits, so that whd_2 is still sent.
		Policy: domain.RetryPolicy{Base: time.Minute, Max: 10 * time.Minute, Window: 24 * time.Hour}})
	if a := <-r.sender.started; a.EventID != "evt_whd_1" {
		t.Fatalf("first sent %s", a.EventID)
	}
	if d := <-r.store.finished; d.ID != "whd_1" {
		t.Fatalf("first finished %s", d.ID)
	}
	// paced waits for the next wait of the pace's length (less the time
	// since the claim or write it follows), passing over the poll's hour;
	// early, when it comes first, is what should have waited.
	paced := func(what string, early <-chan domain.Delivery) {
		t.Helper()
		for {
			select {
			case d := <-r.clock.asked:
				if d > pace-time.Minute && d <= pace {
					return
				}
			case d := <-early:
				t.Fatalf("%s of %s did not wait for the pace", what, d.ID)
			}
		}
	}
	sent := make(chan domain.Delivery, 1)
	go func() {
		for a := range r.sender.started {
			sent <- domain.Delivery{ID: strings.TrimPrefix(a.EventID, "evt_")}
		}
	}()
	claims := func() int {
		r.store.mu.Lock()
		defer r.store.mu.Unlock()
		return len(r.store.claims)
	}
	finishes := func() int {
		r.store.mu.Lock()
		defer r.store.mu.Unlock()
		return r.store.finishCalls
	}

	// The worker coming free claims once more (finding nothing): then the
	// dispatcher waits.
	for claims() < 2 {
		time.Sleep(time.Millisecond)
	}

	r.store.add("whd_2", "whk_1", t0)
	r.wake.Notify() // a commit of whd_2
	paced("the claim", sent)
	if n := claims(); n != 2 {
		t.Fatalf("%d claims before the pace was out, want 2", n)
	}
	r.clock.Advance(pace)
	if d := <-sent; d.ID != "whd_2" {
		t.Fatalf("then sent %s", d.ID)
	}
	paced("the outcome write", r.store.finished)
	if n := finishes(); n != 1 {
		t.Fatalf("%d outcome writes before the pace was out, want 1", n)
	}
	r.clock.Advance(pace)
	if d := <-r.store.finished; d.ID != "whd_2" || d.Status != domain.DeliverySucceeded {
		t.Fatalf("then finished %+v", d)
	}
}

// Under a stream of commits, a webhook with more due than its cap is not
// held to its cap per pace: attempts ending free room that is claimed a
// quarter of the pace after the last claim. (The pace is two hours, and
// the clock is advanced by a quarter of it only.)
func TestDispatcherPaceDoesNotCapABackloggedWebhook(t *testing.T) {
	r := newRig()
	for i := range 12 {
		r.store.add(fmt.Sprintf("whd_%02d", i), "whk_1", t0)
	}
	held := make(chan struct{})
	r.sender.hold = func(ports.WebhookAttempt) <-chan struct{} { return held }
	const pace = 2 * time.Hour
	r.run(t, app.DispatcherOptions{Workers: 8, PerWorkspace: 8, PerWebhook: 4, Pace: pace,
		Policy: domain.RetryPolicy{Base: time.Minute, Max: 10 * time.Minute, Window: 24 * time.Hour}})
	for range 4 {
		<-r.sender.started // the cap's worth, held
	}
	// A commit: the claim loop waits out the pace since its last claim.
	r.wake.Notify()
	for d := range r.clock.asked {
		if d > pace-time.Minute && d <= pace {
			break
		}
	}
	// The attempts ending make a batch of the backlog: the claim waits a
	// quarter of the pace since the last claim, not the whole pace.
	close(held)
	for quarter := false; !quarter; {
		select {
		case d := <-r.clock.asked:
			quarter = d > pace/4-time.Minute && d <= pace/4
		case <-time.After(30 * time.Second):
			t.Fatal("the freed workers did not shorten the claim loop's wait")
		}
	}
	r.clock.Advance(pace / 4)
	for i := range 8 {
		select {
		case <-r.sender.started:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of the 8 deliveries left started while the claim loop waited out the pace", i)
		}
	}
}

// An outcome whose write fails (a broken pooled connection) is written
// again at once rather than left to its lease: left, the lease would lapse
// and the attempt, although made, would be sent a second time.
func TestDispatcherRetriesAFailedFinish(t *testing.T) {
	r := newRig()
	r.store.finishFailures = 2
	r.store.add("whd_1", "whk_1", t0)
	stop := r.run(t, app.DispatcherOptions{Workers: 2, PerWorkspace: 2})
	if d := <-r.store.finished; d.ID != "whd_1" || d.Status != domain.DeliverySucceeded {
		t.Fatalf("finished: %+v", d)
	}
	<-stop()
	r.store.mu.Lock()
	calls := r.store.finishCalls
	r.store.mu.Unlock()
	if calls != 3 {
		t.Fatalf("FinishDeliveries was called %d times, want 2 failures then 1 success", calls)
	}
	if n := len(r.sender.started); n != 1 {
		t.Fatalf("%d attempts were sent, want 1", n)
	}
}

// A 410 fails the delivery at once, sets the webhook inactive and fails its
// other pending deliveries; nothing is retried.
func TestDispatcherDeactivatesOnGone(t *testing.T) {
	r := newRig()
	r.webhooks.hooks["whk_gone"] = domain.Webhook{ID: "whk_gone", WorkspaceID: "wsp_1", URL: hookURL("whk_gone"), Active: true}
	r.store.add("whd_now", "whk_gone", t0)
	r.store.add("whd_later", "whk_gone", t0.Add(30*time.Minute))
	r.sender.answer = func(ports.WebhookAttempt) domain.AttemptResult { return domain.AttemptResult{StatusCode: 410} }
	stop := r.run(t, app.DispatcherOptions{Workers: 2, PerWorkspace: 2})

	if hook := <-r.store.failed; hook != "whk_gone" {
		t.Fatalf("failed the pending deliveries of %s", hook)
	}
	<-stop()
	if d := r.store.get("whd_now"); d.Status != domain.DeliveryFailed || d.Attempts != 1 || d.NextAttemptAt != nil || *d.LastStatusCode != 410 {
		t.Fatalf("the delivery answered 410: %+v", d)
	}
	if d := r.store.get("whd_later"); d.Status != domain.DeliveryFailed {
		t.Fatalf("the other pending delivery: %+v", d)
	}
	r.webhooks.mu.Lock()
	gone := r.webhooks.hooks["whk_gone"]
	r.webhooks.mu.Unlock()
	if gone.Active || gone.DisabledReason != domain.DisabledGone || gone.DisabledAt == nil {
		t.Fatalf("after a 410 the webhook must be disabled as gone: %+v", gone)
	}
	r.events.mu.Lock()
	events := r.events.events
	r.events.mu.Unlock()
	if len(events) != 1 || events[0].Type != domain.EventWebhookDisabled || events[0].Data.(domain.Webhook).Secret != "" {
		t.Fatalf("want one webhook.disabled event without the secret, got %+v", events)
	}
	if n := len(r.sender.started); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
}

// Shutdown stops claiming but lets the attempt in flight finish and record
// its outcome before Run returns, so that closing the database afterwards
// loses nothing.
func TestDispatcherShutdownWaitsForAttemptsInFlight(t *testing.T) {
	r := newRig()
	r.store.add("whd_1", "whk_1", t0)
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	r.sender.hold = func(ports.WebhookAttempt) <-chan struct{} { return hold }
	stop := r.run(t, app.DispatcherOptions{Workers: 2, PerWorkspace: 2})
	t.Cleanup(release)

	<-r.sender.started
	done := stop()
	// A lower bound only: give a wrong Run time to return early.
	select {
	case <-done:
		t.Fatal("Run returned while an attempt was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	<-done
	if d := r.store.get("whd_1"); d.Status != domain.DeliverySucceeded || d.Attempts != 1 {
		t.Fatalf("Run returned before the attempt's outcome was recorded: %+v", d)
	}
}

// A shutdown out of time gives the leases of the attempts in flight back,
// and only theirs: another dispatcher may claim them at once.
func TestDispatcherAbandonGivesBackTheLeasesInFlight(t *testing.T) {
	r := newRig()
	r.store.add("whd_held", "whk_1", t0)
	r.store.add("whd_quick", "whk_2", t0)
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	r.sender.hold = func(a ports.WebhookAttempt) <-chan struct{} {
		if hookOf(a) == "whk_1" {
			return hold
		}
		return nil
	}
	stop := r.run(t, app.DispatcherOptions{Workers: 2, PerWorkspace: 2})
	t.Cleanup(release)
	// Both attempts started; wait until the quick one is recorded.
	<-r.sender.started
	<-r.sender.started
	deadline := time.Now().Add(10 * time.Second)
	for r.store.get("whd_quick").Status != domain.DeliverySucceeded {
		if time.Now().After(deadline) {
			t.Fatal("the quick attempt was never recorded")
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	if err := r.d.Abandon(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.store.mu.Lock()
	released := slices.Clone(r.store.released)
	r.store.mu.Unlock()
	if !slices.Equal(released, []string{"whd_held"}) {
		t.Fatalf("released %v; want exactly the attempt in flight, whd_held", released)
	}
}
