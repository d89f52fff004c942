package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
)

// marshalInOrder marshals the n elements of a list one after another, on
// the caller's goroutine. `make generate` has the lists of Task and
// TaskEdge call it in place of gqlgen's graphql.MarshalSliceConcurrently
// (tools/gqlgen-inorder), which starts a goroutine per element whatever the
// element: 1,000 of them for a dashboard's 20 projects of 50 tasks, whose
// stack growth alone was a sixth of that query's CPU time. A task's fields
// never wait a batch of their own: its project and assignee are loaded, or
// queued in one batch, for the whole page before its fields are marshalled
// (loaders.taskConnection), so nothing is gained by running tasks side by
// side, and the tool refuses a type with a field that runs concurrently.
//
// It behaves as MarshalSliceConcurrently does: each element gets a field
// context with its index, and every element is marshalled; a panic in one is
// recovered and reported as that element's error, and nulls the list.
func marshalInOrder(ctx context.Context, n int, marshal func(ctx context.Context, i int) graphql.Marshaler) graphql.Array {
	ret := make(graphql.Array, n)
	panicked := false
	for i := range n {
		func() {
			ctx := graphql.WithFieldContext(ctx, &graphql.FieldContext{Index: &i})
			defer func() {
				if r := recover(); r != nil {
					graphql.AddError(ctx, graphql.Recover(ctx, r))
					panicked = true
				}
			}()
			ret[i] = marshal(ctx, i)
		}()
	}
	if panicked {
		return nil
	}
	return ret
}
