package main

import (
	"strings"
	"testing"
)

// generated is the shape of gqlgen's executor: an object marshaller and the
// list marshallers of its type.
const generated = `package graph

func (ec *executionContext) _Task(ctx context.Context, sel ast.SelectionSet, obj *model.Task) graphql.Marshaler {
	out := graphql.NewFieldSet(fields)
	%s
}

func (ec *executionContext) marshalNTask2ᚕmodelᚐTaskᚄ(ctx context.Context, sel ast.SelectionSet, v []model.Task) graphql.Marshaler {
	ret := graphql.MarshalSliceConcurrently(ctx, len(v), 0, false, func(ctx context.Context, i int) graphql.Marshaler {
		return ec.marshalNTask2modelᚐTask(ctx, sel, v[i])
	})
	return ret
}

func (ec *executionContext) marshalOTask2ᚕmodelᚐTaskᚄ(ctx context.Context, sel ast.SelectionSet, v []model.Task) graphql.Marshaler {
	ret := graphql.MarshalSliceConcurrently(ctx, len(v), 8, false, func(ctx context.Context, i int) graphql.Marshaler {
		return ec.marshalNTask2modelᚐTask(ctx, sel, v[i])
	})
	return ret
}

func (ec *executionContext) marshalNUser2ᚕmodelᚐUserᚄ(ctx context.Context, sel ast.SelectionSet, v []model.User) graphql.Marshaler {
	ret := graphql.MarshalSliceConcurrently(ctx, len(v), 0, false, func(ctx context.Context, i int) graphql.Marshaler {
		return nil
	})
	return ret
}
`

func source(objectBody string) string { return strings.Replace(generated, "%s", objectBody, 1) }

func TestRewriteMakesTheTypesListsInOrder(t *testing.T) {
	out, err := rewrite(source("out.Values[i] = ec._Task_title(ctx, field, obj)"), []string{"Task"})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "ret := marshalInOrder(ctx, len(v), func(ctx context.Context, i int) graphql.Marshaler {"); n != 2 {
		t.Fatalf("%d of Task's 2 lists rewritten:\n%s", n, out)
	}
	// Another type's list is left alone.
	if !strings.Contains(out, "marshalNUser2ᚕmodelᚐUserᚄ(ctx context.Context, sel ast.SelectionSet, v []model.User) graphql.Marshaler {\n\tret := graphql.MarshalSliceConcurrently(") {
		t.Fatalf("the User list was rewritten:\n%s", out)
	}
	// A second run finds nothing left to rewrite, and says so.
	if _, err := rewrite(out, []string{"Task"}); err == nil || !strings.Contains(err.Error(), "already rewritten") {
		t.Fatalf("second run: %v", err)
	}
}

func TestRewriteRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		src   string
		types []string
		want  string
	}{
		"a type with a concurrent field": {
			source("out.Concurrently(i, func(ctx context.Context) graphql.Marshaler { return innerFunc(ctx, out) })"),
			[]string{"Task"}, "resolves concurrently",
		},
		"a type with no object marshaller": {source(""), []string{"Project"}, "no marshaller of object type Project"},
		"gqlgen's omit_panic_handler": {
			strings.ReplaceAll(source(""), ", false, func", ", true, func"),
			[]string{"Task"}, "no MarshalSliceConcurrently call to rewrite",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := rewrite(tc.src, tc.types); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// An object marshaller but no list of it.
	src := source("") + "\nfunc (ec *executionContext) _Project(ctx context.Context, sel ast.SelectionSet) graphql.Marshaler {\n\treturn nil\n}\n"
	if _, err := rewrite(src, []string{"Project"}); err == nil || !strings.Contains(err.Error(), "no list of Project") {
		t.Fatalf("a type without lists: %v", err)
	}
}
