package graph

import (
	"errors"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// auditListRequest is Query.auditEvents' arguments as the core's request.
func auditListRequest(first *int, after *string, f *model.AuditEventFilter) app.AuditListRequest {
	r := app.AuditListRequest{Page: pageRequest(first, after)}
	if f == nil {
		return r
	}
	for _, a := range f.Actions.Value() {
		r.Actions = append(r.Actions, string(a))
	}
	r.ActorID, r.TargetID = f.ActorID.Value(), f.TargetID.Value()
	r.CreatedAfter, r.CreatedBefore = f.CreatedAfter.Value(), f.CreatedBefore.Value()
	return r
}

func auditEventConnection(p domain.Page[domain.AuditEvent]) *model.AuditEventConnection {
	edges, info := connection(p, func(c string, n *domain.AuditEvent) model.AuditEventEdge {
		return model.AuditEventEdge{Cursor: c, Node: n}
	})
	return &model.AuditEventConnection{Nodes: p.Items, Edges: edges, PageInfo: info}
}

// optionalID is s, or null when empty.
func optionalID(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// auditFilterParams are the GraphQL paths of the core's audit filter
// params: they are fields of the filter argument.
var auditFilterParams = map[string]string{
	"action": "filter.actions", "actor_id": "filter.actorId", "target_id": "filter.targetId",
	"created_after": "filter.createdAfter", "created_before": "filter.createdBefore",
}

// auditError names a filter's error by its path in the filter argument.
func auditError(err error) error {
	var e *domain.Error
	if errors.As(err, &e) {
		if p, ok := auditFilterParams[e.Param]; ok {
			return &domain.Error{Code: e.Code, Message: e.Message, Param: p}
		}
	}
	return err
}
