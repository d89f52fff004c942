package graph

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// num is a comparable graphql.Marshaler.
type num int

func (n num) MarshalGQL(w io.Writer) { fmt.Fprint(w, int(n)) }

func TestMarshalInOrder(t *testing.T) {
	newCtx := func() context.Context {
		return graphql.WithResponseContext(context.Background(), graphql.DefaultErrorPresenter, func(context.Context, any) error {
			return gqlerror.Errorf("recovered")
		})
	}

	t.Run("each element in order, with its index", func(t *testing.T) {
		ctx := newCtx()
		var order []int
		ret := marshalInOrder(ctx, 3, func(ctx context.Context, i int) graphql.Marshaler {
			if got := *graphql.GetFieldContext(ctx).Index; got != i {
				t.Errorf("element %d has index %d in its field context", i, got)
			}
			order = append(order, i)
			return num(i * 10)
		})
		if len(ret) != 3 || len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
			t.Fatalf("marshalled %v in the order %v", ret, order)
		}
		for i, m := range ret {
			if m != num(i*10) {
				t.Fatalf("element %d is %v", i, m)
			}
		}
		if errs := graphql.GetErrors(ctx); len(errs) != 0 {
			t.Fatalf("errors: %v", errs)
		}
	})

	t.Run("each panic is its element's error and nulls the list", func(t *testing.T) {
		ctx := newCtx()
		ran := 0
		ret := marshalInOrder(ctx, 3, func(ctx context.Context, i int) graphql.Marshaler {
			ran++
			if i == 1 || i == 2 {
				panic("boom")
			}
			return num(i)
		})
		if ret != nil {
			t.Fatalf("after a panic the list is %v, want nil", ret)
		}
		if ran != 3 {
			t.Fatalf("%d elements ran, want all 3", ran)
		}
		errs := graphql.GetErrors(ctx)
		if len(errs) != 2 || errs[0].Message != "recovered" || len(errs[0].Path) != 1 || errs[0].Path[0] != ast.PathIndex(1) || errs[1].Path[0] != ast.PathIndex(2) {
			t.Fatalf("errors: %v (path %v)", errs, errs[0].Path)
		}
	})
}
