package server

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Limits of a GraphQL request's query text, checked before it is parsed.
// The parser's cost grows with the text's size and nesting (a list literal
// nested 100,000 deep took seconds and hundreds of MB), so a query past
// any of them is refused unparsed, in time linear in its length. Each is far
// above what a real operation needs: GraphiQL's introspection query is about
// 3 KB, 450 tokens and 10 levels deep.
const (
	// MaxQueryBytes bounds the query text.
	MaxQueryBytes = 128 << 10
	// MaxQueryTokens bounds the lexical tokens of the query (names,
	// numbers, strings, punctuators; commas and comments do not count).
	MaxQueryTokens = 15_000
	// MaxQueryNesting bounds how deeply brackets, braces and parentheses
	// nest in the query.
	MaxQueryNesting = 64
	// MaxVariablesNesting bounds how deeply arrays and objects nest in the
	// variables.
	MaxVariablesNesting = 32
)

// queryTextLimit is the gqlgen extension that applies the limits above. It
// runs first among the operation parameter mutators, before the persisted
// query cache stores a query and before anything parses one, so a refused
// query is neither cached nor parsed. Its errors are validation_failed
// (param query, or the variable's name), answered 422 like every request
// refused before it runs; the messages never echo the query.
type queryTextLimit struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = queryTextLimit{}

func (queryTextLimit) ExtensionName() string { return "QueryTextLimit" }

func (queryTextLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (queryTextLimit) MutateOperationParameters(_ context.Context, p *graphql.RawParams) *gqlerror.Error {
	if msg := checkQueryText(p.Query); msg != "" {
		return refusal(msg, nil)
	}
	for name, v := range p.Variables {
		if nesting(v, 1) > MaxVariablesNesting {
			return refusal(fmt.Sprintf("Variable values may nest at most %d levels deep.", MaxVariablesNesting),
				ast.Path{ast.PathName("variable"), ast.PathName(name)})
		}
	}
	return nil
}

func refusal(msg string, path ast.Path) *gqlerror.Error {
	err := &gqlerror.Error{Message: msg, Path: path}
	errcode.Set(err, errcode.ValidationFailed)
	return err
}

// checkQueryText scans the query text once, as GraphQL's lexer would,
// counting tokens and the nesting of ( [ {, and returns why the document is
// refused, or "". It does not validate: a document it accepts may still fail
// to parse, cheaply.
func checkQueryText(q string) string {
	if len(q) > MaxQueryBytes {
		return fmt.Sprintf("The query must be at most %d bytes.", MaxQueryBytes)
	}
	tokens, depth := 0, 0
	tooMany := fmt.Sprintf("The query must have at most %d tokens.", MaxQueryTokens)
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
			continue
		case c == '#':
			for i < len(q) && q[i] != '\n' && q[i] != '\r' {
				i++
			}
			continue
		case c == '"':
			i = skipString(q, i)
		case c == '(' || c == '[' || c == '{':
			depth++
			if depth > MaxQueryNesting {
				return fmt.Sprintf("Brackets, braces and parentheses may nest at most %d levels deep in the query.", MaxQueryNesting)
			}
			i++
		case c == ')' || c == ']' || c == '}':
			depth = max(depth-1, 0)
			i++
		case isNameByte(c) || c == '-':
			i++
			for i < len(q) && (isNameByte(q[i]) || q[i] == '.' || q[i] == '+' || q[i] == '-') {
				i++
			}
		case c == '.' && len(q)-i >= 3 && q[i:i+3] == "...":
			i += 3
		default:
			i++ // a punctuator, or a byte the parser will refuse
		}
		tokens++
		if tokens > MaxQueryTokens {
			return tooMany
		}
	}
	return ""
}

// skipString returns the index just past the string starting at q[i]: a
// block string """…""" (where \""" does not end it) or a "…" string with
// backslash escapes, ending at the line's end if unterminated.
func skipString(q string, i int) int {
	if len(q)-i >= 3 && q[i:i+3] == `"""` {
		for j := i + 3; j < len(q); j++ {
			switch {
			case q[j] == '\\' && len(q)-j >= 4 && q[j+1:j+4] == `"""`:
				j += 3
			case q[j] == '"' && len(q)-j >= 3 && q[j:j+3] == `"""`:
				return j + 3
			}
		}
		return len(q)
	}
	for j := i + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		case '\n', '\r':
			return j
		}
	}
	return len(q)
}

func isNameByte(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// nesting is the depth of a decoded JSON value, counting from depth for v
// itself, and stops descending past MaxVariablesNesting so that the walk is
// bounded whatever the value.
func nesting(v any, depth int) int {
	deepest := depth
	switch x := v.(type) {
	case map[string]any:
		if depth > MaxVariablesNesting {
			return depth
		}
		for _, e := range x {
			if d := nesting(e, depth+1); d > deepest {
				deepest = d
				if d > MaxVariablesNesting {
					return d
				}
			}
		}
	case []any:
		if depth > MaxVariablesNesting {
			return depth
		}
		for _, e := range x {
			if d := nesting(e, depth+1); d > deepest {
				deepest = d
				if d > MaxVariablesNesting {
					return d
				}
			}
		}
	default:
		return depth - 1 // a scalar adds no level
	}
	return deepest
}
