package server

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// complexityLimitCode is the code gqlgen's complexity extension marks its
// refusals with. Registered as a protocol error, a query over the limit is
// answered 422 like any other query refused before it runs (parse,
// validation and depth errors), rather than 200.
const complexityLimitCode = "COMPLEXITY_LIMIT_EXCEEDED"

func init() { errcode.RegisterErrorType(complexityLimitCode, errcode.KindProtocol) }

// depthLimit refuses, before anything runs, an operation whose fields nest
// deeper than max: { me { id } } has depth 2. Introspection fields (__schema,
// __type, __typename) do not count, so that GraphiQL's introspection query
// works whatever the limit. Fragments count where they are spread.
type depthLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string { return "DepthLimit" }

func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (d depthLimit) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	w := depthWalker{fragments: map[string]int{}}
	if depth := w.selections(op.Operation.SelectionSet); depth > d.max {
		err := gqlerror.Errorf("operation has depth %d, which exceeds the limit of %d", depth, d.max)
		errcode.Set(err, errcode.ValidationFailed)
		return err
	}
	return nil
}

// depthWalker measures selection sets. A fragment's depth is measured once
// and remembered, so that fragments spreading fragments cannot make the walk
// itself expensive (validation has already refused fragment cycles).
type depthWalker struct{ fragments map[string]int }

func (w depthWalker) selections(set ast.SelectionSet) int {
	deepest := 0
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if len(s.Name) >= 2 && s.Name[:2] == "__" {
				continue
			}
			d = 1 + w.selections(s.SelectionSet)
		case *ast.InlineFragment:
			d = w.selections(s.SelectionSet)
		case *ast.FragmentSpread:
			d = w.fragment(s)
		}
		deepest = max(deepest, d)
	}
	return deepest
}

func (w depthWalker) fragment(s *ast.FragmentSpread) int {
	if d, ok := w.fragments[s.Name]; ok {
		return d
	}
	if s.Definition == nil {
		return 0
	}
	w.fragments[s.Name] = 0 // guards a cycle, should validation ever let one by
	d := w.selections(s.Definition.SelectionSet)
	w.fragments[s.Name] = d
	return d
}
