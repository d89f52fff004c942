package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	sqlite "github.com/glebarez/go-sqlite"
	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/seats"

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
	// Seats is how much database work of all workspaces runs at once:
	// each statement (or transaction) holds seats by its weight
	// (ports.WithDBWeight: one per SeatWeight begun) while it runs, and
	// waits in its workspace's queue for them, the workspaces served in
	// turn (adapters/seats). Zero bounds only each workspace's share.
	Seats int
	// WorkspaceShare is how many seats one workspace holds at once; zero
	// leaves work unseated.
	WorkspaceShare int
	// WorkspaceQueue is how many more of one workspace's statements may
	// wait for seats; beyond it, or after waiting StatementTimeout, a
	// statement is refused with a 429 naming database_share.
	WorkspaceQueue int
}

// SeatWeight is the weight of work one seat holds: a read of up to
// SeatWeight-1 rows takes one seat, a search (domain.SearchWeight) two, a
// count of a search three.
const SeatWeight = 1000

// seatsFor is how many seats work of weight w takes.
func seatsFor(w int) int { return 1 + max(w, 0)/SeatWeight }

// weighed is ctx with the weight of the work under it, when that work
// takes more than one seat (one is every context's).
func weighed(ctx context.Context, w int) context.Context {
	if w < SeatWeight {
		return ctx
	}
	return ports.WithDBWeight(ctx, w)
}

// DefaultBudget is the budget of a pool of maxOpen connections on a
// machine of cores: statements stop after 5 s; DefaultSeats seats; one
// workspace holds at most a quarter of the pool's (at least 2), with up to
// QueueFor(share) more waiting.
func DefaultBudget(maxOpen, cores int) Budget {
	share := max((maxOpen+3)/4, 2)
	return Budget{StatementTimeout: 5 * time.Second, Seats: max(DefaultSeats(maxOpen, cores), share),
		WorkspaceShare: share, WorkspaceQueue: QueueFor(share)}
}

// DefaultSeats is four seats a core, at least 8 and at most the pool: the
// database work that runs at once is what the machine's cores (shared
// with the database on a small machine) keep busy, not what the pool
// could open; beyond it work waits in its workspace's turn rather than
// for a core behind another workspace's flood.
func DefaultSeats(maxOpen, cores int) int { return min(max(4*cores, 8), maxOpen) }

// QueueFor is the queue of a workspace's share: 64 statements, or eight
// per slot of a larger share. A busy integration's 32 concurrent requests
// wait their turn; only a flood beyond any client's need is refused.
func QueueFor(share int) int { return max(64, 8*share) }

// MaxOpenConns is the size of the connection pool.
func (db *DB) MaxOpenConns() int { return db.sql.Stats().MaxOpenConnections }

// SetBudget bounds the statements made under a ports.DBScope from now on.
func (db *DB) SetBudget(b Budget) {
	nb := &budget{Budget: b}
	if b.WorkspaceShare > 0 {
		capacity := b.Seats
		if capacity <= 0 {
			capacity = math.MaxInt32
		}
		nb.seats = seats.New(seats.Limits{Capacity: max(capacity, b.WorkspaceShare), Share: b.WorkspaceShare, Queue: b.WorkspaceQueue})
		nb.seats.OnGrant(func(wait time.Duration) {
			if fn := db.onSeatWait.Load(); fn != nil {
				(*fn)(wait)
			}
		})
	}
	db.budget.Store(nb)
}

// ObserveSeatWaits has fn called with each seat grant's wait (zero for
// most), under this budget and the ones set later.
func (db *DB) ObserveSeatWaits(fn func(time.Duration)) { db.onSeatWait.Store(&fn) }

// Budget is the budget in force.
func (db *DB) Budget() Budget {
	if b := db.budget.Load(); b != nil {
		return b.Budget
	}
	return Budget{}
}

// SeatStats reads the seats of the budget in force (zero without seats).
func (db *DB) SeatStats() seats.Stats {
	if b := db.budget.Load(); b != nil && b.seats != nil {
		return b.seats.Stats()
	}
	return seats.Stats{}
}

// QueuedStatements is how many statements or transactions of the
// workspace wait for seats now (tests wait on it to know a statement is
// queued, not merely started).
func (db *DB) QueuedStatements(workspaceID string) int {
	if b := db.budget.Load(); b != nil && b.seats != nil {
		_, queued := b.seats.Held(workspaceID)
		return queued
	}
	return 0
}

type budget struct {
	Budget
	seats *seats.Seats
}

// errStatementTimeout is the answer to a request whose statement ran past
// the deadline.
func errStatementTimeout(d time.Duration) *domain.Error {
	return domain.Refusal(domain.CodeUnavailable, domain.LimitStatementTime,
		"The request's database work did not finish within its %s deadline and was stopped. Narrow the request (fewer or longer words in q, more filters, smaller pages) or retry later.", d)
}

var errDatabaseShare = domain.Refusal(domain.CodeTooManyRequests, domain.LimitDatabaseShare,
	"Your workspace is using its whole share of the database. Retry after the time in the Retry-After header.")

// admit seats one statement or transaction of ctx's workspace by its
// weight, waiting in the workspace's queue for at most the statement
// timeout, and returns ctx marked as seated with the release of its
// seats. A context with no scope, or whose statement or transaction is
// seated already, takes none: ctx comes back as it is, with a nil
// release. The wait and the time seated are added to the scope's Phases.
func (db *DB) admit(ctx context.Context) (context.Context, func(), error) {
	b := db.budget.Load()
	if b == nil || b.seats == nil {
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
		return ctx, nil, nil // its transaction holds the seats
	}
	n := seatsFor(ports.DBWeightOf(ctx))
	start := time.Now()
	h := b.seats.TryAcquire(scope.WorkspaceID, n)
	seated := start
	if h == nil {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if b.StatementTimeout > 0 {
			wctx, cancel = context.WithTimeoutCause(ctx, b.StatementTimeout, errDatabaseShare)
		}
		var err error
		h, err = b.seats.Acquire(wctx, scope.WorkspaceID, n)
		cancel()
		seated = time.Now()
		scope.Phases.AddQueued(seated.Sub(start))
		if errors.Is(err, seats.ErrQueueFull) {
			err = errDatabaseShare
		}
		if err != nil {
			return ctx, nil, err
		}
	}
	return context.WithValue(ctx, slotKey{db}, true), func() {
		h.Release()
		scope.Phases.AddDatabase(time.Since(seated))
	}, nil
}

// slotKey marks a context whose statement or transaction is seated: what
// runs under it (a statement of the transaction, even on GORM's own handle
// of it; a statement GORM nests in another) takes no seats of its own,
// which could wait for ever on its own holder.
type slotKey struct{ db *DB }

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
