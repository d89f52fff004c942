package ports

import (
	"context"
	"sync/atomic"
	"time"
)

// dbScopeKey carries a request's database scope in its context.
type dbScopeKey struct{}

// DBScope says whose database work a context's statements are: the store
// bounds every statement made under a scope (docs/operations.md, the
// database budget) with a deadline, and seats it among the other
// workspaces' work by its cost. Statements under no scope (the webhook
// dispatcher, administration commands, migrations) are not bounded so.
type DBScope struct {
	// WorkspaceID is the caller's workspace; empty before the caller is
	// known (authentication), when only the deadline applies.
	WorkspaceID string
	// Phases, when set, adds up where the scope's database work spent its
	// time (the request's access log line).
	Phases *Phases
}

// WithDBScope marks ctx's statements as an API request's, of workspaceID
// ("" before authentication); the Phases of a scope ctx has already are
// kept.
func WithDBScope(ctx context.Context, workspaceID string) context.Context {
	s, _ := DBScopeOf(ctx)
	return context.WithValue(ctx, dbScopeKey{}, DBScope{WorkspaceID: workspaceID, Phases: s.Phases})
}

// WithRequestScope marks ctx as a request's, before its caller is known,
// with p to add up its phases.
func WithRequestScope(ctx context.Context, p *Phases) context.Context {
	return context.WithValue(ctx, dbScopeKey{}, DBScope{Phases: p})
}

// DBScopeOf is ctx's scope, and whether it has one.
func DBScopeOf(ctx context.Context) (DBScope, bool) {
	s, ok := ctx.Value(dbScopeKey{}).(DBScope)
	return s, ok
}

// Phases are where one request's database work spent its time: waiting
// for seats (Queued) and holding them (Database: the statements, their
// connections and, for a transaction, the work between them). Safe for
// concurrent use: GraphQL resolves fields at once.
type Phases struct {
	queued, database atomic.Int64
}

// AddQueued adds time spent waiting for seats.
func (p *Phases) AddQueued(d time.Duration) {
	if p != nil {
		p.queued.Add(int64(d))
	}
}

// MoveToQueued counts d, spent holding seats while waiting for something
// else (SQLite's one writer), as waiting rather than as holding: the
// holding time that includes it is added when the seats are returned.
func (p *Phases) MoveToQueued(d time.Duration) {
	if p != nil {
		p.queued.Add(int64(d))
		p.database.Add(-int64(d))
	}
}

// AddDatabase adds time spent holding seats.
func (p *Phases) AddDatabase(d time.Duration) {
	if p != nil {
		p.database.Add(int64(d))
	}
}

// Queued is the time spent waiting for seats so far.
func (p *Phases) Queued() time.Duration {
	if p == nil {
		return 0
	}
	return time.Duration(p.queued.Load())
}

// Database is the time spent holding seats so far.
func (p *Phases) Database() time.Duration {
	if p == nil {
		return 0
	}
	return time.Duration(p.database.Load())
}

// dbWeightKey carries the weight of the database work under a context.
type dbWeightKey struct{}

// WithDBWeight says that the database work under ctx (a statement, or a
// transaction begun under it) reads or writes about weight, in the units
// of domain's costs (a row read is 1, domain.SearchWeight a search's
// lookups): the store seats it by it.
func WithDBWeight(ctx context.Context, weight int) context.Context {
	return context.WithValue(ctx, dbWeightKey{}, weight)
}

// DBWeightOf is the weight WithDBWeight gave ctx, or 1.
func DBWeightOf(ctx context.Context) int {
	if w, ok := ctx.Value(dbWeightKey{}).(int); ok {
		return w
	}
	return 1
}
