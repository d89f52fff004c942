package app

import (
	"context"
	"sync"

	"github.com/worktrack/worktrack/core/ports"
)

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
