package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

// PresentError is the one error presenter (gqlgen's SetErrorPresenter): every
// error of a response, from a resolver, a loader or gqlgen itself, leaves
// here with the extensions {type, code, request_id, param} of
// docs/api.md#errors.
//
//   - A domain error keeps its code; its param is renamed to the GraphQL
//     field (graphParam).
//   - An error gqlgen raised itself (parsing, validation, variables, the
//     depth and complexity limits, persisted queries) is the client's:
//     validation_failed, or resource_not_found for an unknown persisted
//     query (the message stays PersistedQueryNotFound, which clients such as
//     Apollo's look for).
//   - Anything else is internal_error; its detail goes to the log under the
//     request id, never to the client (Caller.Public).
func PresentError(ctx context.Context, err error) *gqlerror.Error {
	out := graphql.DefaultErrorPresenter(ctx, err)
	var public *domain.Error
	if _, ok := domain.AsError(err); ok {
		public = publicError(ctx, err)
	} else if out.Err == nil {
		public = requestError(out)
	} else {
		public = publicError(ctx, err)
	}
	if public.Code == domain.CodeValidationFailed {
		public = withGraphParam(public, out.Path)
	}
	// Present a copy: the error value may be gqlgen's own (a validation
	// error, say), which is not ours to rewrite.
	presented := *out
	presented.Err = nil
	presented.Message = public.Message
	presented.Extensions = Extensions(public, requestID(ctx))
	return &presented
}

func publicError(ctx context.Context, err error) *domain.Error {
	if r := requestOf(ctx); r != nil && r.Public != nil {
		return r.Public(err)
	}
	// Outside a request (never in practice): the same rule, on the default log.
	if e, ok := domain.AsError(err); ok && e.Code != domain.CodeInternal {
		return e
	}
	slog.ErrorContext(ctx, "graphql request failed", "error", err.Error())
	return domain.Errorf(domain.CodeInternal, "An unexpected error occurred. Quote the request id when contacting support.")
}

// apqNotFoundCode is the code gqlgen's APQ extension marks an unknown hash
// with (its message is PersistedQueryNotFound).
const apqNotFoundCode = "PERSISTED_QUERY_NOT_FOUND"

func requestError(e *gqlerror.Error) *domain.Error {
	if code, _ := e.Extensions["code"].(string); code == apqNotFoundCode {
		return &domain.Error{Code: domain.CodeNotFound, Message: e.Message}
	}
	param := "query"
	// Errors in variable values carry the path variable.<name>[.field…]:
	// the field's name, or, in an item of a bulk mutation's inputs, the
	// field's path from the list (inputs[3].title), as the core names a
	// bulk request's items.
	if len(e.Path) > 1 && e.Path[0] == ast.PathName("variable") {
		param = lastName(e.Path)
		if item := itemPath(e.Path); item != "" {
			param = item
		}
	}
	return &domain.Error{Code: domain.CodeValidationFailed, Message: e.Message, Param: param}
}

// withGraphParam names the GraphQL field at fault: the domain's snake_case
// param renamed, or, when the core could not know it (a DateTime that does
// not parse), the last field of the error's path. Messages never name the
// param, so they pass through as they are.
func withGraphParam(e *domain.Error, path ast.Path) *domain.Error {
	param := graphParam(e.Param)
	if param == "" {
		param = argumentPath(path)
	}
	return &domain.Error{Code: e.Code, Message: e.Message, Param: param}
}

// graphParams are the REST names whose GraphQL names are not their
// camelCase: the one place GraphQL renames the core's params.
var graphParams = map[string]string{
	"limit":          "first",
	"cursor":         "after",
	"type":           "types", // Query.events and Subscription.events take a list
	"starting_after": "after", // Subscription.events(after:)
}

// graphParam is the GraphQL name of a domain param: the page parameters'
// GraphQL names, else the camelCase of the snake_case field (assignee_id ->
// assigneeId, due_at -> dueAt); a bulk request's items are the argument
// inputs (inputs[3].assigneeId).
func graphParam(p string) string {
	if g, ok := graphParams[p]; ok {
		return g
	}
	p = domain.NameItems(p, "inputs")
	parts := strings.Split(p, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// inputArguments are the arguments that take an input object, whose
// fields' errors are named by their path from the argument
// (filter.dueAfter), as the core names their rules' errors.
var inputArguments = []string{"filter", "orderBy"}

// argumentPath names the field of an error's path: its path from an input
// argument when it is under one, else its last name.
func argumentPath(path ast.Path) string {
	if item := itemPath(path); item != "" {
		return item
	}
	for i := len(path) - 1; i >= 0; i-- {
		if n, ok := path[i].(ast.PathName); ok && slices.Contains(inputArguments, string(n)) {
			var names []string
			for _, el := range path[i:] {
				if n, ok := el.(ast.PathName); ok {
					names = append(names, string(n))
				}
			}
			return strings.Join(names, ".")
		}
	}
	return lastName(path)
}

// itemPath is the path of a field of an item of a bulk mutation's inputs
// from the argument (variable.inputs[3].title, createTasks.inputs[3].dueAt:
// inputs[3].title, inputs[3].dueAt), or "" when path goes through no such
// item (other lists' items are named by their field, as before).
func itemPath(path ast.Path) string {
	for i := 1; i+1 < len(path); i++ {
		if _, ok := path[i].(ast.PathIndex); !ok || path[i-1] != ast.PathName(bulkArgument) {
			continue
		}
		if _, field := path[i+1].(ast.PathName); field {
			return path[i-1:].String()
		}
	}
	return ""
}

// bulkArgument is the argument of a bulk mutation's items (createTasks):
// the one list of input objects whose items' errors carry their index.
const bulkArgument = "inputs"

func lastName(path ast.Path) string {
	for i := len(path) - 1; i >= 0; i-- {
		if n, ok := path[i].(ast.PathName); ok {
			return string(n)
		}
	}
	return ""
}

func requestID(ctx context.Context) string {
	if r := requestOf(ctx); r != nil {
		return r.RequestID
	}
	return ""
}

// Extensions are the error fields of docs/api.md#errors, as a GraphQL
// error's extensions: type, code, request_id, and param for validation.
func Extensions(e *domain.Error, requestID string) map[string]any {
	ext := map[string]any{"type": wire.TypeOf(e.Code), "code": string(e.Code), "request_id": requestID}
	if e.Code == domain.CodeValidationFailed && e.Param != "" {
		ext["param"] = e.Param
	}
	return ext
}

// Recover returns the gqlgen recover function: a resolver panic becomes an
// internal error, the stack in the log only.
func Recover(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "graphql panic", "request_id", requestID(ctx), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return errors.New("panic in a resolver")
	}
}
