package server

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"golang.org/x/sync/semaphore"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph"
)

// workBudget admits queries and mutations to execution by their complexity
// (see complexity): at most its capacity of complexity runs at once in the
// process, and the operations beyond it wait their turn, first come first
// served, or until their client goes away.
//
// Executing an operation builds its whole result in memory before a byte
// of it is written; a dashboard's projects × tasks query holds a thousand
// tasks' worth. Under 32 concurrent such queries the process held 32
// results at once (peak RSS about 160 MiB) for no more throughput than 4
// to 8 at once give on two cores (the same requests a second at 66-83
// MiB): the others only waited for CPU with their memory allocated. Cheap
// operations (a task by id weighs about 10) pass as before.
//
// Subscriptions are not held: their response handler waits for the next
// event, and holding budget while waiting would starve everything else.
//
// One API key, one user and one workspace each hold at most half the
// capacity at once: their further operations wait on a share of their
// own, so that one key's near-limit queries never hold the whole process
// while other keys' operations wait, and a user's many keys (or a
// workspace's many users) hold no more than one.
type workBudget struct {
	sem      *semaphore.Weighted
	capacity int64
	keys     *keyShares
}

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = workBudget{}

func newWorkBudget(capacity int) workBudget {
	return workBudget{
		sem: semaphore.NewWeighted(int64(capacity)), capacity: int64(capacity),
		keys: &keyShares{capacity: max(int64(capacity)/2, 1), shares: map[string]*keyShare{}},
	}
}

func (b workBudget) set() bool { return b.sem != nil }

func (workBudget) ExtensionName() string { return "WorkBudget" }

func (workBudget) Validate(graphql.ExecutableSchema) error { return nil }

func (b workBudget) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	op := graphql.GetOperationContext(ctx)
	if op == nil || op.Operation == nil || op.Operation.Operation == ast.Subscription {
		return next(ctx)
	}
	weight := int64(1)
	if stats := extension.GetComplexityStats(ctx); stats != nil {
		weight = min(max(int64(stats.Complexity), 1), b.capacity)
	}
	who, _ := graph.CallerOf(ctx)
	release, err := b.keys.acquireAll(ctx, weight, shareNames(who.Actor)...)
	if err == nil {
		if err = b.sem.Acquire(ctx, weight); err != nil {
			release()
		}
	}
	if err != nil {
		// Only the request's end stops the wait: its client went away.
		return &graphql.Response{Errors: gqlerror.List{graph.PresentError(ctx, err)}}
	}
	defer release()
	defer b.sem.Release(weight)
	return next(ctx)
}

// keyShares are the API keys' shares of the budget: a semaphore per key
// with operations in execution or waiting, of half the budget's capacity.
type keyShares struct {
	capacity int64
	mu       sync.Mutex
	shares   map[string]*keyShare
}

type keyShare struct {
	sem   *semaphore.Weighted
	users int // operations holding or waiting for sem
}

// shareNames are the shares an actor's operations take, in the one order
// every operation takes them: its key's, its user's and its workspace's,
// so that minting keys, or users, buys no more of the budget.
func shareNames(a domain.Actor) []string {
	if a.KeyID == "" {
		return nil
	}
	return []string{"key:" + a.KeyID, "user:" + a.UserID, "workspace:" + a.WorkspaceID}
}

// acquireAll takes weight of each named share in order, waiting until ctx
// ends, and returns the release of them all.
func (k *keyShares) acquireAll(ctx context.Context, weight int64, names ...string) (func(), error) {
	releases := make([]func(), 0, len(names))
	release := func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}
	for _, name := range names {
		r, err := k.acquire(ctx, name, weight)
		if err != nil {
			release()
			return nil, err
		}
		releases = append(releases, r)
	}
	return release, nil
}

// acquire takes weight (at most the share's capacity) of key's share,
// waiting until ctx ends for it, and returns its release. An operation of
// no key (none in production) has no share.
func (k *keyShares) acquire(ctx context.Context, key string, weight int64) (release func(), err error) {
	if key == "" {
		return func() {}, nil
	}
	weight = min(weight, k.capacity)
	k.mu.Lock()
	s := k.shares[key]
	if s == nil {
		s = &keyShare{sem: semaphore.NewWeighted(k.capacity)}
		k.shares[key] = s
	}
	s.users++
	k.mu.Unlock()
	done := func() {
		k.mu.Lock()
		if s.users--; s.users == 0 {
			delete(k.shares, key)
		}
		k.mu.Unlock()
	}
	if err := s.sem.Acquire(ctx, weight); err != nil {
		done()
		return nil, err
	}
	return func() {
		s.sem.Release(weight)
		done()
	}, nil
}
