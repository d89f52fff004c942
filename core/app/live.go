package app

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// LiveOptions tune the live feed. Zero values take the defaults.
type LiveOptions struct {
	// MaxPerKey is how many subscriptions one API key holds at once in this
	// process (20).
	MaxPerKey int
	// MaxBehind is how many of its events a subscriber may fall behind
	// before its subscription ends with subscriber_too_slow (1,000).
	MaxBehind int
	// Window is how many of the newest events of the log the feed keeps in
	// memory, for every subscriber to read from (4,096). A subscriber
	// further behind, or resuming from an older event, reads the database.
	Window int
	// Poll is how often the feed looks at the log while it has subscribers,
	// whatever the notifications say (1s): events reach subscribers within
	// it even if a notification was lost.
	Poll time.Duration
	// Pause is the least time between two reads of the log (10ms): under a
	// stream of commits the feed reads them in batches, not one by one.
	Pause time.Duration
	// Logger receives the feed's failures to read the log.
	Logger *slog.Logger
}

func (o *LiveOptions) defaults() {
	if o.MaxPerKey <= 0 {
		o.MaxPerKey = 20
	}
	if o.MaxBehind <= 0 {
		o.MaxBehind = 1000
	}
	if o.Window <= 0 {
		o.Window = 4096
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Pause <= 0 {
		o.Pause = 10 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// LiveDeps are the ports Live uses.
type LiveDeps struct {
	Log      ports.EventStore
	Projects ports.ProjectStore
	Watch    ports.EventWatcher
}

// Live is the live feed of the event log, for subscriptions
// (docs/api.md#live-updates). One feed per process reads the log once for all of its
// subscribers: woken by this process's commits, by the other processes'
// (through the EventWatcher) and by a poll, it positions what committed,
// reads the new events of every workspace in log order, keeps the newest in
// a window, and wakes the subscribers, each of which takes from the window
// what its filters match, in order, from its own cursor. A subscriber whose
// cursor is older than the window (one resuming from an old event, or one
// that fell far behind) reads the database until it reaches the window.
//
// So a subscriber sees every matching event after its cursor once and in
// log order: the cursor only moves past events that were either sent or did
// not match, and the log's positions never change once given.
type Live struct {
	d      LiveDeps
	o      LiveOptions
	logged *Signal // this process's commits of events
	kick   chan struct{}

	mu     sync.Mutex
	subs   int
	perKey map[string]int
	// The window: the events positioned base+1 … head, all of them (log
	// positions are consecutive), when known.
	known   bool
	base    int64
	window  []domain.LoggedEvent
	changed chan struct{} // closed (and replaced) when head moves
}

// NewLive makes the live feed. Run must run for it to see new events.
func NewLive(d LiveDeps, logged *Signal, o LiveOptions) *Live {
	mustHave(map[string]any{"Log": d.Log, "Projects": d.Projects, "Watch": d.Watch})
	if logged == nil {
		panic("app: live feed without the signal of logged events")
	}
	o.defaults()
	return &Live{d: d, o: o, logged: logged, kick: make(chan struct{}, 1), perKey: map[string]int{}, changed: make(chan struct{})}
}

// SubscribeRequest is one subscription: the events of the caller's
// workspace of any of Types (all when empty) in ProjectID (any when nil),
// from the one after the event After, or, without it, from the next to
// commit. Validation errors name them as GET /v1/events does: type,
// project_id and starting_after.
type SubscribeRequest struct {
	Types     []string
	ProjectID *string
	After     *string
	// Ended, when set, is told why a feed that did not end with its
	// context ended (subscriber_too_slow, or a failure to read the log),
	// just before its channel closes.
	Ended func(error)
}

// subscriber is what the feed knows of one subscription.
type subscriber struct {
	workspaceID string
	keyID       string
	types       []domain.EventType
	projectID   *string
	actor       domain.Actor // whose key's projects the subscriber sees
}

func (s *subscriber) matches(e *domain.LoggedEvent) bool {
	if e.WorkspaceID != s.workspaceID || !s.actor.SeesEvent(e.ProjectID) {
		return false
	}
	if len(s.types) > 0 && !slices.Contains(s.types, e.Type) {
		return false
	}
	return s.projectID == nil || e.ProjectID == *s.projectID
}

// Subscribe starts a subscription for a, until ctx ends. Any role may
// subscribe. It is refused with validation_failed for bad filters or an
// After that is not an event of the workspace still in the log, and with
// too_many_requests when the key holds MaxPerKey subscriptions already.
//
// The events arrive on the returned channel, which closes when the
// subscription ends: when ctx ends, or, after r.Ended was told why, when
// the subscriber fell behind or the log could not be read.
func (l *Live) Subscribe(ctx context.Context, a domain.Actor, r SubscribeRequest) (<-chan *domain.LoggedEvent, error) {
	if err := a.Require(domain.ScopeEventsRead); err != nil {
		return nil, err
	}
	s := &subscriber{workspaceID: a.WorkspaceID, keyID: a.KeyID, actor: a}
	var err error
	if s.types, err = parseEventTypes(r.Types); err != nil {
		return nil, err
	}
	if s.projectID, err = eventProject(ctx, l.d.Projects, a, r.ProjectID); err != nil {
		return nil, err
	}
	from, err := l.start(ctx, a, r)
	if err != nil {
		return nil, err
	}
	if err := l.join(s); err != nil {
		return nil, err
	}
	out := make(chan *domain.LoggedEvent)
	go l.pump(ctx, s, from, out, r.Ended)
	wake(l.kick)
	return out, nil
}

// start is the position after which the subscription's events are: After's,
// or the log's end as the subscribe arrived. Every event that commits later
// is positioned above it. The feed positions events as they commit (Run),
// so the only ones committed earlier and not yet positioned are those of
// the last few milliseconds: those arrive too, which no client can tell
// from a subscribe sent a moment earlier. (Positioning here first would
// put below the end the events that commit while it runs, after the
// subscribe: those must arrive.)
func (l *Live) start(ctx context.Context, a domain.Actor, r SubscribeRequest) (int64, error) {
	if r.After == nil {
		return l.d.Log.LastPosition(ctx)
	}
	invalid := domain.Invalid("starting_after", "Must be the id of an event of this workspace still in the log.")
	if !domain.IsID(*r.After, domain.PrefixEvent) {
		return 0, invalid
	}
	if _, err := l.d.Log.PositionEvents(ctx); err != nil {
		return 0, err
	}
	e, err := l.d.Log.FindEvent(ctx, a.WorkspaceID, *r.After)
	if err != nil {
		if domain.IsCode(err, domain.CodeNotFound) {
			return 0, invalid
		}
		return 0, err
	}
	if !a.SeesEvent(e.ProjectID) {
		return 0, invalid
	}
	return e.Seq, nil
}

func (l *Live) join(s *subscriber) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perKey[s.keyID] >= l.o.MaxPerKey {
		return domain.Errorf(domain.CodeTooManyRequests,
			"This API key holds %d subscriptions already, the most it may. Complete one before you start another.", l.o.MaxPerKey)
	}
	l.perKey[s.keyID]++
	l.subs++
	return nil
}

func (l *Live) leave(s *subscriber) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perKey[s.keyID]--; l.perKey[s.keyID] <= 0 {
		delete(l.perKey, s.keyID)
	}
	l.subs--
}

// Subscriptions is how many subscriptions this process holds (a gauge).
func (l *Live) Subscriptions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.subs
}

// page bounds what a subscriber takes from the window or reads from the
// database at once.
const page = 256

// pump sends s its events after cursor, in log order, until ctx ends or it
// falls more than MaxBehind events behind.
func (l *Live) pump(ctx context.Context, s *subscriber, cursor int64, out chan<- *domain.LoggedEvent, ended func(error)) {
	defer close(out)
	defer l.leave(s)
	end := func(err error) {
		if ended != nil && ctx.Err() == nil {
			ended(err)
		}
	}
	for {
		batch, next, wait, err := l.next(ctx, s, cursor)
		if err != nil {
			end(err)
			return
		}
		for i := range batch {
			e := &batch[i]
			for sent := false; !sent; {
				select {
				case out <- e:
					sent = true
				case <-ctx.Done():
					return
				case <-wait:
					var n int
					if n, wait = l.behind(s, e.Seq-1); n > l.o.MaxBehind {
						end(domain.Errorf(domain.CodeSubscriberTooSlow,
							"This subscription fell more than %d events behind and has ended. Subscribe again with after set to the id of the last event you received.", l.o.MaxBehind))
						return
					}
				}
			}
		}
		cursor = next
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-wait:
			}
		}
	}
}

// next returns the subscriber's next events after cursor (at most a page),
// the cursor after them, and a channel closed when there may be more.
func (l *Live) next(ctx context.Context, s *subscriber, cursor int64) ([]domain.LoggedEvent, int64, <-chan struct{}, error) {
	l.mu.Lock()
	wait, known, head := l.changed, l.known, l.base+int64(len(l.window))
	if known && cursor >= l.base {
		if cursor >= head {
			l.mu.Unlock()
			return nil, cursor, wait, nil
		}
		var batch []domain.LoggedEvent
		next := cursor
		for _, e := range l.window[cursor-l.base:] {
			next = e.Seq
			if s.matches(&e) {
				if batch = append(batch, e); len(batch) == page {
					break
				}
			}
		}
		l.mu.Unlock()
		return batch, next, wait, nil
	}
	l.mu.Unlock()

	// Older than the window: read the database. Everything up to upTo was
	// positioned, so visible, before the read.
	upTo := head
	if !known {
		last, err := l.d.Log.LastPosition(ctx)
		if err != nil {
			return nil, cursor, wait, err
		}
		upTo = last
	}
	f := ports.EventFilter{WorkspaceID: s.workspaceID, AfterSeq: cursor, Types: s.types, ProjectID: s.projectID, Limit: page,
		ProjectIDs: s.actor.ProjectIDs, ProjectsOnly: !s.actor.SeesWorkspaceEvents()}
	batch, err := l.d.Log.ListEvents(ctx, f)
	if err != nil {
		return nil, cursor, wait, err
	}
	next := cursor
	if len(batch) > 0 {
		next = batch[len(batch)-1].Seq
	}
	if len(batch) < page {
		next = max(next, upTo)
	}
	if len(batch) == 0 && next > cursor {
		// Nothing matched up to upTo: look again at once from there.
		closed := make(chan struct{})
		close(closed)
		wait = closed
	}
	return batch, next, wait, nil
}

// behind counts the events of s in the window after cursor, and returns
// the channel closed when the window next changes. Both are read under one
// lock: a channel taken after the count could be the one made by a change
// the count did not see, and a subscriber then past the limit would wait
// for a further event to learn it, however long that took.
func (l *Live) behind(s *subscriber, cursor int64) (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := max(cursor-l.base, 0)
	if !l.known || from > int64(len(l.window)) {
		return 0, l.changed
	}
	n := 0
	for i := range l.window[from:] {
		if s.matches(&l.window[from+int64(i)]) {
			n++
		}
	}
	return n, l.changed
}
