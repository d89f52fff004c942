package graph

import "github.com/worktrack/worktrack/core/app"

// Resolver holds the dependencies of the resolvers, and nothing else: the
// core services. Per-request state (the actor, the dataloaders) travels in
// the context, put there by the HTTP handler (handler.go).
type Resolver struct {
	App *app.App
}
