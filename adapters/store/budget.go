package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	sqlite "github.com/glebarez/go-sqlite"
	"gorm.io/gorm"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Budget bounds the database work of API requests: the statements made
// under a ports.DBScope (docs/operations.md#the-database-budget).
type Budget struct {
	// StatementTimeout is how long one statement may run; it is then
	// stopped (PostgreSQL cancels it; on SQLite the task lists and counts
	// check it as they read) and the request answered with a 503 naming
	// statement_timeout. Zero leaves statements unbounded.
	StatementTimeout time.Duration
	// WorkspaceShare is how many statements (or transactions) of one
	// workspace hold connections at once; zero leaves workspaces unbounded.
	WorkspaceShare int
	// WorkspaceQueue is how many more of one workspace's may wait for its
	// share; beyond it, or after waiting StatementTimeout, a statement is
	// refused with a 429 naming database_share.
	WorkspaceQueue int
}

// DefaultBudget is the budget of a pool of maxOpen connections: statements
// stop after 5 s, and one workspace holds at most a quarter of the pool
// (at least 2), with up to QueueFor(share) more waiting.
func DefaultBudget(maxOpen int) Budget {
	share := max((maxOpen+3)/4, 2)
	return Budget{StatementTimeout: 5 * time.Second, WorkspaceShare: share, WorkspaceQueue: QueueFor(share)}
}

// QueueFor is the queue of a workspace's share: 64 statements, or eight
// per slot of a larger share. A busy integration's 32 concurrent requests
// wait their turn; only a flood beyond any client's need is refused.
func QueueFor(share int) int { return max(64, 8*share) }

// MaxOpenConns is the size of the connection pool.
func (db *DB) MaxOpenConns() int { return db.sql.Stats().MaxOpenConnections }

// SetBudget bounds the statements made under a ports.DBScope from now on.
func (db *DB) SetBudget(b Budget) {
	db.budget.Store(&budget{Budget: b, shares: map[string]*workspaceShare{}})
}

// Budget is the budget in force.
func (db *DB) Budget() Budget {
	if b := db.budget.Load(); b != nil {
		return b.Budget
	}
	return Budget{}
}

// QueuedStatements is how many statements or transactions of the
// workspace wait for a slot of its share now (tests wait on it to know a
// statement is queued, not merely started).
func (db *DB) QueuedStatements(workspaceID string) int {
	b := db.budget.Load()
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.shares[workspaceID]; s != nil {
		return s.waiting
	}
	return 0
}

type budget struct {
	Budget
	mu     sync.Mutex
	shares map[string]*workspaceShare
}

// workspaceShare is one workspace's slots: a semaphore of WorkspaceShare,
// and how many statements hold or wait for it (the entry is dropped when
// none do).
type workspaceShare struct {
	slots   chan struct{}
	users   int
	waiting int
}

// errStatementTimeout is the answer to a request whose statement ran past
// the deadline.
func errStatementTimeout(d time.Duration) *domain.Error {
	return domain.Refusal(domain.CodeUnavailable, domain.LimitStatementTime,
		"The request's database work did not finish within its %s deadline and was stopped. Narrow the request (fewer or longer words in q, more filters, smaller pages) or retry later.", d)
}

var errDatabaseShare = domain.Refusal(domain.CodeTooManyRequests, domain.LimitDatabaseShare,
	"Your workspace is using its whole share of the database. Retry after the time in the Retry-After header.")

// admit takes a slot of ctx's workspace for one statement or transaction,
// waiting in the workspace's queue for at most the statement timeout, and
// returns ctx marked as holding it with its release. A context with no
// scope, or whose statement or transaction holds a slot already, takes
// none: ctx comes back as it is, with a nil release.
func (db *DB) admit(ctx context.Context) (context.Context, func(), error) {
	b := db.budget.Load()
	if b == nil || b.WorkspaceShare <= 0 {
		return ctx, nil, nil
	}
	scope, ok := ports.DBScopeOf(ctx)
	if !ok || scope.WorkspaceID == "" {
		return ctx, nil, nil
	}
	if _, held := ctx.Value(slotKey{db}).(bool); held {
		return ctx, nil, nil
	}
	if _, inTx := ctx.Value(txKey{db}).(*gorm.DB); inTx {
		return ctx, nil, nil // its transaction holds the connection
	}
	release, err := b.take(ctx, scope.WorkspaceID)
	if err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, slotKey{db}, true), release, nil
}

// slotKey marks a context whose statement or transaction holds a slot of
// its workspace's share: what runs under it (a statement of the
// transaction, even on GORM's own handle of it; a statement GORM nests in
// another) takes no second one, which could wait for ever on its own
// holder.
type slotKey struct{ db *DB }

func (b *budget) take(ctx context.Context, workspaceID string) (func(), error) {
	b.mu.Lock()
	s := b.shares[workspaceID]
	if s == nil {
		s = &workspaceShare{slots: make(chan struct{}, b.WorkspaceShare)}
		b.shares[workspaceID] = s
	}
	select {
	case s.slots <- struct{}{}:
		s.users++
		b.mu.Unlock()
		return func() { b.give(workspaceID, s) }, nil
	default:
	}
	if s.waiting >= b.WorkspaceQueue {
		b.drop(workspaceID, s)
		b.mu.Unlock()
		return nil, errDatabaseShare
	}
	s.users++
	s.waiting++
	b.mu.Unlock()
	var timeout <-chan time.Time
	if b.StatementTimeout > 0 {
		t := time.NewTimer(b.StatementTimeout)
		defer t.Stop()
		timeout = t.C
	}
	var err error
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-timeout:
		err = errDatabaseShare
	}
	b.mu.Lock()
	s.waiting--
	if err != nil {
		s.users--
		b.drop(workspaceID, s)
		b.mu.Unlock()
		return nil, err
	}
	b.mu.Unlock()
	return func() { b.give(workspaceID, s) }, nil
}

func (b *budget) give(workspaceID string, s *workspaceShare) {
	<-s.slots
	b.mu.Lock()
	s.users--
	b.drop(workspaceID, s)
	b.mu.Unlock()
}

// drop forgets s once nobody holds or waits for it; b.mu is held.
func (b *budget) drop(workspaceID string, s *workspaceShare) {
	if s.users == 0 && b.shares[workspaceID] == s {
		delete(b.shares, workspaceID)
	}
}

// deadline is the context of one statement made under ctx: ctx with the
// statement timeout when ctx has a scope, and the function that ends it,
// which turns the statement's error into statement_timeout when the
// deadline (not ctx) stopped it.
func (db *DB) deadline(ctx context.Context) (context.Context, func(error) error) {
	b := db.budget.Load()
	if b == nil || b.StatementTimeout <= 0 {
		return ctx, func(err error) error { return err }
	}
	if _, ok := ports.DBScopeOf(ctx); !ok {
		return ctx, func(err error) error { return err }
	}
	return db.timeout(ctx, b)
}

// claimDeadline is deadline for the dispatcher's claim on PostgreSQL, which
// runs for no workspace (ClaimDeliveries).
func (db *DB) claimDeadline(ctx context.Context) (context.Context, func(error) error) {
	b := db.budget.Load()
	if b == nil || b.StatementTimeout <= 0 {
		return ctx, func(err error) error { return err }
	}
	return db.timeout(ctx, b)
}

// timeout is ctx with b's statement deadline, and the end that cancels it
// and names a statement it stopped.
func (db *DB) timeout(ctx context.Context, b *budget) (context.Context, func(error) error) {
	sctx, cancel := context.WithTimeout(ctx, b.StatementTimeout)
	return sctx, func(err error) error {
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w (%w)", errStatementTimeout(b.StatementTimeout), err)
		}
		return err
	}
}

// bound runs one statement under ctx's budget: a slot of its workspace's
// share and the statement deadline.
func (db *DB) bound(ctx context.Context, run func(ctx context.Context) error) error {
	ctx, release, err := db.admit(ctx)
	if err != nil {
		return err
	}
	if release != nil {
		defer release()
	}
	sctx, end := db.deadline(ctx)
	return end(run(sctx))
}

// registerBudget bounds every GORM statement as bound does: the first
// callback of each processor takes the slot and sets the deadline, the
// last ends them. Row is left out: its rows are read after its callbacks,
// so Raw(…).Scan is not bounded; the API's statements read with Find or
// read instead.
func registerBudget(db *DB) error {
	type ends struct {
		release func()
		end     func(error) error
	}
	const key = "worktrack:budget"
	begin := func(tx *gorm.DB) {
		// GORM copies Settings into the statements it nests; the ends of
		// an outer statement are not this one's.
		tx.Statement.Settings.Delete(key)
		ctx, release, err := db.admit(tx.Statement.Context)
		if err != nil {
			_ = tx.AddError(err)
			return
		}
		sctx, end := db.deadline(ctx)
		if release != nil {
			// A panic between the callbacks skips finish: the deadline's
			// end still frees the slot, once.
			release = sync.OnceFunc(release)
			stop := context.AfterFunc(sctx, release)
			free := release
			release = func() { stop(); free() }
		}
		tx.Statement.Context = sctx
		tx.Statement.Settings.Store(key, ends{release: release, end: end})
	}
	finish := func(tx *gorm.DB) {
		v, ok := tx.Statement.Settings.LoadAndDelete(key)
		if !ok {
			return
		}
		e := v.(ends)
		if err := e.end(tx.Error); err != tx.Error { //nolint:errorlint // identity: end returns the error it was given unless it wrapped it
			tx.Error = err
		}
		if e.release != nil {
			e.release()
		}
	}
	cb := db.gorm.Callback()
	for name, p := range map[string][2]interface {
		Register(string, func(*gorm.DB)) error
	}{
		"create": {cb.Create().Before("*"), cb.Create().After("*")},
		"query":  {cb.Query().Before("*"), cb.Query().After("*")},
		"update": {cb.Update().Before("*"), cb.Update().After("*")},
		"delete": {cb.Delete().Before("*"), cb.Delete().After("*")},
		"raw":    {cb.Raw().Before("*"), cb.Raw().After("*")},
	} {
		if err := p[0].Register(key+":begin:"+name, begin); err != nil {
			return err
		}
		if err := p[1].Register(key+":end:"+name, finish); err != nil {
			return err
		}
	}
	return nil
}

// On SQLite a statement's context interrupts it only while it is
// prepared, not while it steps through rows (glebarez/go-sqlite), so the
// task lists and counts, the statements that read many rows, check their
// context themselves: sqliteLiveArg in their arguments becomes a token of
// the statement's context (read), and worktrack_live(?) in their WHERE
// fails the statement once that context has ended, by its deadline or
// because its client went away.
const errLiveFunc = "worktrack: statement context ended"

// sqliteLiveArg stands, in a statement's arguments, for the token of its
// context.
type sqliteLiveArg struct{}

// liveStatements are the contexts of the SQLite statements running with a
// token, by token.
var (
	liveStatements sync.Map
	liveTokens     atomic.Int64
)

// liveToken registers ctx for worktrack_live and returns its token and the
// function that forgets it.
func liveToken(ctx context.Context) (int64, func()) {
	t := liveTokens.Add(1)
	liveStatements.Store(t, ctx)
	return t, func() { liveStatements.Delete(t) }
}

// registerLiveFunc registers worktrack_live(token) with the SQLite driver,
// once a process: true while the token's context lasts, then an error.
var registerLiveFunc = sync.OnceValue(func() error {
	return sqlite.RegisterScalarFunction("worktrack_live", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		if t, ok := args[0].(int64); ok {
			if ctx, ok := liveStatements.Load(t); ok && ctx.(context.Context).Err() != nil {
				return nil, errors.New(errLiveFunc)
			}
		}
		return int64(1), nil
	})
})
