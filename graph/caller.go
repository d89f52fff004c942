package graph

import (
	"context"
	"time"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Caller is who an operation runs for, and how its errors leave: the
// transport (graph/server) puts one in the context of every operation it
// runs, over HTTP or WebSocket, and the resolvers and the error presenter
// read it there.
type Caller struct {
	// Actor is the authenticated caller.
	Actor domain.Actor
	// RequestID is the id of the HTTP request (or WebSocket upgrade) that
	// carries the operation, quoted in every error's extensions.
	RequestID string
	// Public turns an error into what the client may see: domain errors as
	// they are, anything else internal_error with its detail logged under
	// the request id. Nil: the same rule, on the default logger.
	Public func(error) *domain.Error
}

// request is a Caller with the dataloaders of one result.
type request struct {
	Caller
	loaders *loaders
}

type requestKey struct{}

// WithCaller returns ctx carrying c and fresh dataloaders over a, which wait
// loaderWait to gather a batch. The transport calls it once per result: a
// POST, or each event of a subscription, so that nested fields show the
// current state, never what an earlier result loaded.
func WithCaller(ctx context.Context, a *app.App, c Caller, loaderWait time.Duration) context.Context {
	// The operation's statements are the caller's workspace's, bounded
	// by its share of the database, over either transport.
	ctx = ports.WithDBScope(ctx, c.Actor.WorkspaceID)
	return context.WithValue(ctx, requestKey{}, &request{Caller: c, loaders: newLoaders(a, c.Actor, loaderWait)})
}

// CallerOf is the Caller that WithCaller put in ctx.
func CallerOf(ctx context.Context) (Caller, bool) {
	if r := requestOf(ctx); r != nil {
		return r.Caller, true
	}
	return Caller{}, false
}

func requestOf(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r
}

// actor is the authenticated caller. Every operation runs behind the
// transport's authentication, so the caller is always there; an empty actor
// (no role) would be refused by every core service anyway.
func actor(ctx context.Context) domain.Actor {
	if r := requestOf(ctx); r != nil {
		return r.Actor
	}
	return domain.Actor{}
}

// loadersOf returns the result's dataloaders.
func loadersOf(ctx context.Context) *loaders {
	return requestOf(ctx).loaders
}
