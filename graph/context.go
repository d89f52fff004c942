package graph

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/core/domain"
)

// request is what one HTTP request to /graphql carries into the resolvers and
// the error presenter: the authenticated caller, the request's dataloaders,
// and the gin context, through which the edge's accessors give the request
// id and the logger (httpedge.RequestID, httpedge.PublicError).
type request struct {
	actor   domain.Actor
	loaders *loaders
	gin     *gin.Context
}

type requestKey struct{}

func withRequest(ctx context.Context, r *request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

func requestOf(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r
}

// actor is the authenticated caller (httpedge.Actor, taken when the request
// entered GraphQL). Every resolver runs behind the edge's authentication
// chain, so the request is always there; an empty actor (no role) would be
// refused by every core service anyway.
func actor(ctx context.Context) domain.Actor {
	if r := requestOf(ctx); r != nil {
		return r.actor
	}
	return domain.Actor{}
}

// loadersOf returns the request's dataloaders.
func loadersOf(ctx context.Context) *loaders {
	return requestOf(ctx).loaders
}
