package server

import (
	"context"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph"
)

// operation is a context of one operation of the given kind and
// complexity, as gqlgen's executor and complexity extension leave it.
func operation(kind ast.Operation, complexity int) context.Context {
	op := &graphql.OperationContext{Operation: &ast.OperationDefinition{Operation: kind}}
	op.Stats.SetExtension("ComplexityLimit", &extension.ComplexityStats{Complexity: complexity, ComplexityLimit: 100})
	return graphql.WithOperationContext(context.Background(), op)
}

// run starts an operation through b; entered closes when its execution
// starts, and it finishes when release is closed.
func run(ctx context.Context, b workBudget) (entered, release, done chan struct{}, resp *graphql.Response) {
	entered, release, done = make(chan struct{}), make(chan struct{}), make(chan struct{})
	resp = &graphql.Response{}
	go func() {
		defer close(done)
		*resp = *b.InterceptResponse(ctx, func(context.Context) *graphql.Response {
			close(entered)
			<-release
			return &graphql.Response{}
		})
	}()
	return entered, release, done, resp
}

func mustEnter(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not start", what)
	}
}

// waiting reports whether an operation is still kept from executing: it
// has not started after the budget's other operations were seen to run.
func waiting(c chan struct{}) bool {
	select {
	case <-c:
		return false
	case <-time.After(50 * time.Millisecond):
		return true
	}
}

// At most the budget's capacity of complexity executes at once; the rest
// waits, first come first served, and an operation beyond the whole budget
// runs alone rather than never.
func TestWorkBudgetAdmitsByComplexity(t *testing.T) {
	b := newWorkBudget(10)

	in6, out6, done6, _ := run(operation(ast.Query, 6), b)
	mustEnter(t, in6, "the first query")
	in3, out3, _, _ := run(operation(ast.Query, 3), b)
	mustEnter(t, in3, "a query within what is left")
	in5, out5, _, _ := run(operation(ast.Mutation, 5), b)
	if !waiting(in5) {
		t.Fatal("a mutation of 5 ran beside 6 + 3 in a budget of 10")
	}
	// A subscription waits for its events; it never holds or waits for budget.
	inSub, outSub, _, _ := run(operation(ast.Subscription, 50), b)
	mustEnter(t, inSub, "a subscription with the budget spent")
	close(outSub)

	close(out6)
	<-done6
	mustEnter(t, in5, "the waiting mutation, once the first query finished")
	close(out3)
	close(out5)

	inBig, outBig, _, _ := run(operation(ast.Query, 1000), b)
	mustEnter(t, inBig, "a query costlier than the whole budget")
	in1, out1, _, _ := run(operation(ast.Query, 1), b)
	if !waiting(in1) {
		t.Fatal("a query ran beside one that took the whole budget")
	}
	close(outBig)
	mustEnter(t, in1, "the query after the costly one")
	close(out1)
}

// An operation whose client goes away while it waits does not run, and
// answers with an error; the budget it waited for stays free.
func TestWorkBudgetWaitEndsWithTheRequest(t *testing.T) {
	b := newWorkBudget(10)
	in, out, _, _ := run(operation(ast.Query, 10), b)
	mustEnter(t, in, "the first query")

	ctx, cancel := context.WithCancel(operation(ast.Query, 1))
	entered, _, done, resp := run(ctx, b)
	cancel()
	<-done
	select {
	case <-entered:
		t.Fatal("a query whose client went away ran")
	default:
	}
	if len(resp.Errors) != 1 {
		t.Fatalf("errors %v, want one", resp.Errors)
	}
	close(out)
	in2, out2, _, _ := run(operation(ast.Query, 10), b)
	mustEnter(t, in2, "a query of the whole budget after the abandoned wait")
	close(out2)
}

// keyed is operation run for an API key.
func keyed(kind ast.Operation, complexity int, key string) context.Context {
	return as(kind, complexity, domain.Actor{KeyID: key, UserID: "usr_" + key, WorkspaceID: "wsp_" + key})
}

// as is an operation of the actor.
func as(kind ast.Operation, complexity int, a domain.Actor) context.Context {
	return graph.WithCaller(operation(kind, complexity), nil, graph.Caller{Actor: a}, time.Millisecond)
}

// A user's keys share the user's half of the budget, and a workspace's
// users the workspace's: minting keys or users buys no more of it, while
// another workspace's operations run.
func TestWorkBudgetGivesNoUserOrWorkspaceMoreThanHalf(t *testing.T) {
	for name, second := range map[string]domain.Actor{
		"another key of the user":       {KeyID: "key_A2", UserID: "usr_A", WorkspaceID: "wsp_A"},
		"another user of the workspace": {KeyID: "key_B", UserID: "usr_B", WorkspaceID: "wsp_A"},
	} {
		t.Run(name, func(t *testing.T) {
			b := newWorkBudget(100)
			first := domain.Actor{KeyID: "key_A1", UserID: "usr_A", WorkspaceID: "wsp_A"}
			in1, out1, done1, _ := run(as(ast.Query, 45, first), b)
			mustEnter(t, in1, "the first query")
			in2, out2, done2, _ := run(as(ast.Query, 45, second), b)
			if !waiting(in2) {
				t.Fatal("the second query ran: one user or workspace would hold 90 of a budget of 100")
			}
			inO, outO, doneO, _ := run(keyed(ast.Query, 45, "key_O"), b)
			mustEnter(t, inO, "another workspace's query")
			close(outO)
			close(out1)
			<-done1
			mustEnter(t, in2, "the second query, once the first finished")
			close(out2)
			<-done2
			<-doneO
			b.keys.mu.Lock()
			defer b.keys.mu.Unlock()
			if n := len(b.keys.shares); n != 0 {
				t.Fatalf("%d shares left behind with nothing running", n)
			}
		})
	}
}

// One key holds at most half the budget: its second near-limit query waits
// while another key's query runs.
func TestWorkBudgetGivesNoKeyMoreThanHalf(t *testing.T) {
	b := newWorkBudget(100)
	inA1, outA1, doneA1, _ := run(keyed(ast.Query, 45, "key_A"), b)
	mustEnter(t, inA1, "A's first query")
	inA2, outA2, doneA2, _ := run(keyed(ast.Query, 45, "key_A"), b)
	if !waiting(inA2) {
		t.Fatal("A's second query ran: A would hold 90 of a budget of 100")
	}
	inB, outB, doneB, _ := run(keyed(ast.Query, 45, "key_B"), b)
	mustEnter(t, inB, "B's query while A waits for its share")
	close(outB)
	close(outA1)
	<-doneA1
	mustEnter(t, inA2, "A's second query, once its first finished")
	close(outA2)

	// A query costlier than a key's share still runs, alone for its key.
	inBig, outBig, doneBig, _ := run(keyed(ast.Query, 80, "key_C"), b)
	mustEnter(t, inBig, "a query beyond a key's share")
	inC, outC, doneC, _ := run(keyed(ast.Query, 1, "key_C"), b)
	if !waiting(inC) {
		t.Fatal("a query ran beside its key's query that took the key's whole share")
	}
	close(outBig)
	mustEnter(t, inC, "the key's next query")
	close(outC)
	for _, done := range []chan struct{}{doneA2, doneB, doneBig, doneC} {
		<-done
	}
	b.keys.mu.Lock()
	defer b.keys.mu.Unlock()
	if n := len(b.keys.shares); n != 0 {
		t.Fatalf("%d key shares left behind with nothing running", n)
	}
}
