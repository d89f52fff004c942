package graph

import (
	"context"
	"reflect"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/worktrack/worktrack/core/domain"
)

// BatchLimit refuses, before anything runs, an operation whose createTasks
// fields ask for more than domain.MaxBatchItems tasks in all. Each
// createTasks field is its own transaction, bounded by the core to
// MaxBatchItems; without this, one document of many aliases (a: createTasks
// b: createTasks …) would create that many times the bound in one request,
// under the complexity limit as long as each selects little. Counted here,
// no alias runs when the sum is over: the first ones would otherwise have
// committed before the one over the bound was reached.
//
// The fields are those the operation executes: fragments are followed,
// @skip and @include applied, and inputs given as variables counted with
// the variables' values, so the count is what the executor would create.
func BatchLimit() graphql.HandlerExtension { return batchLimit{} }

type batchLimit struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = batchLimit{}

func (batchLimit) ExtensionName() string { return "BatchLimit" }

func (batchLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (batchLimit) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil || op.Operation.Operation != ast.Mutation {
		return nil
	}
	n := 0
	for _, f := range graphql.CollectFields(op, op.Operation.SelectionSet, mutationImplementors) {
		if f.Name == "createTasks" {
			n += listLen(f.ArgumentMap(op.Variables)[bulkArgument])
		}
	}
	if n <= domain.MaxBatchItems {
		return nil
	}
	// The domain error carries the param the presenter names (items ->
	// inputs, as for one createTasks over the bound); the gqlgen code marks
	// it as refused before running (422, like the other limits).
	err := gqlerror.Wrap(domain.Invalid(domain.ParamItems,
		"The document asks for %d tasks in its createTasks fields; %d is the most one document may create.", n, domain.MaxBatchItems))
	errcode.Set(err, errcode.ValidationFailed)
	return err
}

// listLen is the number of items of a list argument's value; a value that
// is not a list counts as the one item GraphQL coerces it to.
func listLen(v any) int {
	if v == nil {
		return 0
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice {
		return rv.Len()
	}
	return 1
}
