package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// selectsTaskAssignee reports whether the current Project.tasks field reads
// its tasks' assignees, through nodes { assignee } or edges { node {
// assignee } }, fragments included.
func selectsTaskAssignee(ctx context.Context) bool {
	op := graphql.GetOperationContext(ctx)
	for _, f := range graphql.CollectFieldsCtx(ctx, []string{"TaskConnection"}) {
		switch f.Name {
		case "nodes":
			if selects(op, f.Selections, "assignee", "Task", "Node") {
				return true
			}
		case "edges":
			for _, e := range graphql.CollectFields(op, f.Selections, []string{"TaskEdge"}) {
				if e.Name == "node" && selects(op, e.Selections, "assignee", "Task", "Node") {
					return true
				}
			}
		}
	}
	return false
}

func selects(op *graphql.OperationContext, set ast.SelectionSet, name string, types ...string) bool {
	for _, f := range graphql.CollectFields(op, set, types) {
		if f.Name == name {
			return true
		}
	}
	return false
}
