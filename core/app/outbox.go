package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// outbox is the transactional outbox: the EventRecorder that writes an
// event, and one delivery per active webhook subscribed to its type, in the
// transaction of the change itself. A committed change therefore always has
// its deliveries and a rolled-back one never has; the dispatcher sends them
// afterwards, at least once.
type outbox struct {
	d    Deps
	wake *signal
}

var _ ports.EventRecorder = (*outbox)(nil)

// RecordEvent renders the payload once (every attempt and redelivery sends
// these exact bytes), stores the event and fans it out. The local
// dispatcher is woken after the transaction commits; dispatchers of other
// processes are woken by the store, where the database can.
func (o *outbox) RecordEvent(ctx context.Context, e domain.Event) error {
	payload, err := o.d.Payloads.RenderEvent(e)
	if err != nil {
		return fmt.Errorf("outbox: render %s: %w", e.Type, err)
	}
	hooks, err := o.d.Webhooks.FindSubscribedWebhooks(ctx, e.WorkspaceID, e.Type)
	if err != nil {
		return err
	}
	if err := o.d.EventLog.CreateEvent(ctx, e, payload); err != nil {
		return err
	}
	if len(hooks) == 0 {
		return nil
	}
	ds := make([]domain.Delivery, 0, len(hooks))
	for _, w := range hooks {
		ds = append(ds, domain.NewDelivery(o.d.IDs.NewID(domain.PrefixDelivery), w, e))
	}
	if err := o.d.Deliveries.CreateDeliveries(ctx, ds); err != nil {
		return err
	}
	afterCommit(ctx, o.wake.notify)
	return nil
}

// signal wakes every subscribed dispatcher of this process. Notifications
// coalesce: a dispatcher that has not yet looked sees one, however many
// were sent.
type signal struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func newSignal() *signal { return &signal{subs: map[chan struct{}]struct{}{}} }

func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (s *signal) subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[c] = struct{}{}
	s.mu.Unlock()
	return c, func() {
		s.mu.Lock()
		delete(s.subs, c)
		s.mu.Unlock()
	}
}

// hookedTx wraps the store's Transactor so that code inside a transaction
// can ask for something to run once it has committed (never after a
// rollback): the outbox uses it to wake the local dispatcher only when the
// deliveries it wrote are visible.
type hookedTx struct{ inner ports.Transactor }

var _ ports.Transactor = hookedTx{}

type commitHooksKey struct{}

type commitHooks struct {
	mu  sync.Mutex
	fns []func()
}

// InTx runs fn in a transaction of the inner Transactor, then, if it
// committed, the hooks registered during it. A nested call joins the outer
// transaction and its hooks wait for the outer commit.
func (t hookedTx) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, nested := ctx.Value(commitHooksKey{}).(*commitHooks); nested {
		return t.inner.InTx(ctx, fn)
	}
	h := &commitHooks{}
	if err := t.inner.InTx(context.WithValue(ctx, commitHooksKey{}, h), fn); err != nil {
		return err
	}
	h.mu.Lock()
	fns := h.fns
	h.mu.Unlock()
	for _, f := range fns {
		f()
	}
	return nil
}

// afterCommit runs fn once the transaction in ctx commits; outside a
// hooked transaction it runs fn at once.
func afterCommit(ctx context.Context, fn func()) {
	h, ok := ctx.Value(commitHooksKey{}).(*commitHooks)
	if !ok {
		fn()
		return
	}
	h.mu.Lock()
	h.fns = append(h.fns, fn)
	h.mu.Unlock()
}
