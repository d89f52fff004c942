package graph

import (
	"github.com/99designs/gqlgen/graphql"

	"github.com/worktrack/worktrack/core/app"
)

// Resolver holds the dependencies of the resolvers, and nothing else: the
// core services. Per-operation state (the caller, the dataloaders) travels
// in the context, put there by the transport (WithCaller).
type Resolver struct {
	App *app.App
}

// NewSchema is the executable schema over the core services, weighed by
// Complexity. The transport (graph/server) runs it.
func NewSchema(a *app.App) graphql.ExecutableSchema {
	return NewExecutableSchema(Config{Resolvers: &Resolver{App: a}, Complexity: Complexity()})
}
