package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// The schema names the look-ahead below reads. A rename in schema.graphql
// that missed them would silently turn the look-ahead off (and each task's
// assignee would wait for a batch of its own); TestLookAheadNamesAreInTheSchema
// fails instead.
const (
	typeTask           = "Task"
	typeNode           = "Node"
	typeTaskConnection = "TaskConnection"
	typeTaskEdge       = "TaskEdge"
	fieldNodes         = "nodes"
	fieldEdges         = "edges"
	fieldNode          = "node"
	fieldAssignee      = "assignee"
	fieldProject       = "project"
)

// lookAheadFields are the (type, field) pairs the look-ahead reads.
var lookAheadFields = [][2]string{
	{typeTaskConnection, fieldNodes}, {typeTaskConnection, fieldEdges}, {typeTaskEdge, fieldNode},
	{typeTask, fieldAssignee}, {typeTask, fieldProject},
}

// selectsTaskAssignee reports whether the current Project.tasks field reads
// its tasks' assignees, through nodes { assignee } or edges { node {
// assignee } }, fragments included.
func selectsTaskAssignee(ctx context.Context) bool {
	return connectionSelects(graphql.GetOperationContext(ctx), graphql.CollectFieldsCtx(ctx, []string{typeTaskConnection}),
		typeTaskEdge, fieldAssignee, typeTask, typeNode)
}

// selectsTaskProject reports whether the current task connection field
// reads its tasks' projects, as selectsTaskAssignee does their assignees.
func selectsTaskProject(ctx context.Context) bool {
	return connectionSelects(graphql.GetOperationContext(ctx), graphql.CollectFieldsCtx(ctx, []string{typeTaskConnection}),
		typeTaskEdge, fieldProject, typeTask, typeNode)
}

// connectionSelects reports whether the fields of a connection read name of
// its items, through nodes { name } or edges { node { name } }.
func connectionSelects(op *graphql.OperationContext, fields []graphql.CollectedField, edgeType, name string, itemTypes ...string) bool {
	for _, f := range fields {
		switch f.Name {
		case fieldNodes:
			if selects(op, f.Selections, name, itemTypes...) {
				return true
			}
		case fieldEdges:
			for _, e := range graphql.CollectFields(op, f.Selections, []string{edgeType}) {
				if e.Name == fieldNode && selects(op, e.Selections, name, itemTypes...) {
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
