// Command gqlgen-inorder rewrites gqlgen's generated executor so that the
// lists of the given GraphQL object types marshal their elements in order on
// one goroutine (graph.marshalInOrder) instead of one goroutine per element
// (graphql.MarshalSliceConcurrently, which gqlgen uses for every list of
// objects and has no setting for). `make generate` runs it after gqlgen:
//
//	gqlgen-inorder -types Task,TaskEdge graph/generated.go
//
// It fails, and writes nothing, when a type has a field that gqlgen runs
// concurrently (a resolver, or a method taking a context: such a field may
// wait, and its elements should wait side by side), or when it finds no list
// of a type to rewrite.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// helper is what the rewritten lists call, in the generated file's package.
const helper = "marshalInOrder(ctx, len(v), "

// concurrentCall is gqlgen's call in a list marshaller, up to the element
// function: MarshalSliceConcurrently(ctx, len(v), workerLimit,
// omitPanicHandler, . marshalInOrder always recovers panics, as gqlgen does
// unless omit_panic_handler is set; with it set, the tool finds no call.
var concurrentCall = regexp.MustCompile(`graphql\.MarshalSliceConcurrently\(ctx, len\(v\), [0-9]+, false, `)

func main() {
	types := flag.String("types", "", "comma-separated GraphQL object types whose lists marshal in order")
	flag.Parse()
	if *types == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gqlgen-inorder -types A,B FILE")
		os.Exit(2)
	}
	file := flag.Arg(0)
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen-inorder:", err)
		os.Exit(1)
	}
	out, err := rewrite(string(src), strings.Split(*types, ","))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen-inorder:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil { //nolint:gosec // a source file, as gqlgen writes it
		fmt.Fprintln(os.Stderr, "gqlgen-inorder:", err)
		os.Exit(1)
	}
}

// rewrite returns src with the list marshallers of types calling helper.
func rewrite(src string, types []string) (string, error) {
	for _, typ := range types {
		typ = strings.TrimSpace(typ)
		object, ok := function(src, "func (ec *executionContext) _"+typ+"(ctx ")
		if !ok {
			return "", fmt.Errorf("no marshaller of object type %s", typ)
		}
		if strings.Contains(object, ".Concurrently(") {
			return "", fmt.Errorf("type %s has a field gqlgen resolves concurrently (a resolver, or a method taking a context); its lists must stay concurrent", typ)
		}
		n := 0
		for _, prefix := range []string{"marshalN", "marshalO"} {
			head := "func (ec *executionContext) " + prefix + typ + "2ᚕ"
			for from := 0; ; {
				i := strings.Index(src[from:], head)
				if i < 0 {
					break
				}
				start := from + i
				body, _ := function(src[start:], head)
				loc := concurrentCall.FindStringIndex(body)
				if loc == nil {
					if strings.Contains(body, helper) {
						return "", errors.New("already rewritten: run gqlgen first")
					}
					return "", fmt.Errorf("%s…: no MarshalSliceConcurrently call to rewrite", head)
				}
				src = src[:start+loc[0]] + helper + src[start+loc[1]:]
				n++
				from = start + len(head)
			}
		}
		if n == 0 {
			return "", fmt.Errorf("no list of %s to rewrite", typ)
		}
	}
	return src, nil
}

// function returns the text of the top-level function of src that starts
// with head, up to its closing brace at the start of a line.
func function(src, head string) (string, bool) {
	i := strings.Index(src, head)
	if i < 0 {
		return "", false
	}
	end := strings.Index(src[i:], "\n}\n")
	if end < 0 {
		return src[i:], true
	}
	return src[i : i+end+3], true
}
