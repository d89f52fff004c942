package graph

import (
	"context"
	"encoding/json"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/worktrack/worktrack/core/domain"
)

// selectsTaskAssignee reports whether the current Project.tasks field reads
// its tasks' assignees, through nodes { assignee } or edges { node {
// assignee } }, fragments included.
func selectsTaskAssignee(ctx context.Context) bool {
	return connectionSelects(graphql.GetOperationContext(ctx), graphql.CollectFieldsCtx(ctx, []string{"TaskConnection"}), "TaskEdge", "assignee", "Task", "Node")
}

// connectionSelects reports whether the fields of a connection read name of
// its items, through nodes { name } or edges { node { name } }.
func connectionSelects(op *graphql.OperationContext, fields []graphql.CollectedField, edgeType, name string, itemTypes ...string) bool {
	for _, f := range fields {
		switch f.Name {
		case "nodes":
			if selects(op, f.Selections, name, itemTypes...) {
				return true
			}
		case "edges":
			for _, e := range graphql.CollectFields(op, f.Selections, []string{edgeType}) {
				if e.Name == "node" && selects(op, e.Selections, name, itemTypes...) {
					return true
				}
			}
		}
	}
	return false
}

// projectTaskPages are the task pages the Project.tasks fields under the
// current Query.projects field will ask for, for each of ps: the keys the
// Project.tasks resolver computes, so that what prefetchTaskPages caches is
// what it finds. Fields filtered by status or assignee are left to the
// dataloader (their enum and id arguments would have to be decoded here a
// second time); so are arguments that are not plain values.
func projectTaskPages(ctx context.Context, ps []domain.Project) []taskPageKey {
	if len(ps) == 0 {
		return nil
	}
	op := graphql.GetOperationContext(ctx)
	var projectFields []graphql.CollectedField
	for _, f := range graphql.CollectFieldsCtx(ctx, []string{"ProjectConnection"}) {
		switch f.Name {
		case "nodes":
			projectFields = append(projectFields, graphql.CollectFields(op, f.Selections, []string{"Project", "Node"})...)
		case "edges":
			for _, e := range graphql.CollectFields(op, f.Selections, []string{"ProjectEdge"}) {
				if e.Name == "node" {
					projectFields = append(projectFields, graphql.CollectFields(op, e.Selections, []string{"Project", "Node"})...)
				}
			}
		}
	}
	var keys []taskPageKey
	seen := map[taskPageKey]bool{}
	for _, f := range projectFields {
		if f.Name != "tasks" {
			continue
		}
		args := f.ArgumentMap(op.Variables)
		if args["status"] != nil || args["assigneeId"] != nil {
			continue
		}
		var first *int
		if v, ok := args["first"]; ok && v != nil {
			n, ok := intArg(v)
			if !ok {
				continue
			}
			first = &n
		}
		var after *string
		if v, ok := args["after"]; ok && v != nil {
			s, ok := v.(string)
			if !ok {
				continue
			}
			after = &s
		}
		withAssignees := connectionSelects(op, graphql.CollectFields(op, f.Selections, []string{"TaskConnection"}), "TaskEdge", "assignee", "Task", "Node")
		for _, p := range ps {
			k := newTaskPageKey(p.ID, pageRequest(first, after), nil, nil, withAssignees)
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// intArg is an Int argument as the query or its JSON variables spell it.
func intArg(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), int64(int(n)) == n
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil && int64(int(i)) == i
	case float64:
		return int(n), float64(int(n)) == n
	}
	return 0, false
}

func selects(op *graphql.OperationContext, set ast.SelectionSet, name string, types ...string) bool {
	for _, f := range graphql.CollectFields(op, set, types) {
		if f.Name == name {
			return true
		}
	}
	return false
}
