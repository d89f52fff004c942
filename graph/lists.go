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
// never wait on their own: its project and assignee are loaded for the whole
// page before its fields are marshalled (loaders.task), so nothing is gained
// by running tasks side by side, and the tool refuses a type with a field
// that runs concurrently.
//
// It keeps MarshalSliceConcurrently's contract: each element gets a field
// context with its index, and a panic in one is recovered, reported as that
// element's error and nulls the list.
func marshalInOrder(ctx context.Context, n int, marshal func(ctx context.Context, i int) graphql.Marshaler) graphql.Array {
	ret := make(graphql.Array, n)
	for i := range n {
		ok := func() (ok bool) {
			ctx := graphql.WithFieldContext(ctx, &graphql.FieldContext{Index: &i})
			defer func() {
				if r := recover(); r != nil {
					graphql.AddError(ctx, graphql.Recover(ctx, r))
					ok = false
				}
			}()
			ret[i] = marshal(ctx, i)
			return true
		}()
		if !ok {
			return nil
		}
	}
	return ret
}
