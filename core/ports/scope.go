package ports

import "context"

// dbScopeKey carries a request's database scope in its context.
type dbScopeKey struct{}

// DBScope says whose database work a context's statements are: the store
// bounds every statement made under a scope (docs/operations.md, the
// database budget) with a deadline, and the statements of one workspace by
// that workspace's share of the connections. Statements under no scope
// (the webhook dispatcher, administration commands, migrations) are not
// bounded so.
type DBScope struct {
	// WorkspaceID is the caller's workspace; empty before the caller is
	// known (authentication), when only the deadline applies.
	WorkspaceID string
}

// WithDBScope marks ctx's statements as an API request's, of workspaceID
// ("" before authentication).
func WithDBScope(ctx context.Context, workspaceID string) context.Context {
	return context.WithValue(ctx, dbScopeKey{}, DBScope{WorkspaceID: workspaceID})
}

// DBScopeOf is ctx's scope, and whether it has one.
func DBScopeOf(ctx context.Context) (DBScope, bool) {
	s, ok := ctx.Value(dbScopeKey{}).(DBScope)
	return s, ok
}
