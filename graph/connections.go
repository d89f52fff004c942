package graph

import (
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// pageRequest turns connection arguments into the core's page request. An
// absent or null first is the default 20; an out-of-range first is refused
// by the core (validation_failed, param first). An absent, null or empty
// after is the first page, as an empty cursor is over REST.
func pageRequest(first *int, after *string) domain.PageRequest {
	req := domain.PageRequest{Limit: domain.DefaultPageLimit}
	if first != nil {
		req.Limit = *first
	}
	if after != nil {
		req.Cursor = *after
	}
	return req
}

// edges returns the cursor of each item of a page and the page's PageInfo.
// An item's cursor is the one REST's next_cursor would be for a page ending
// at that item, so endCursor equals REST's next_cursor whenever hasNextPage
// is true, and both APIs accept each other's cursors.
func edges[T any](p domain.Page[T], scope string, pos func(T) domain.Position) ([]string, *model.PageInfo) {
	cursors := make([]string, len(p.Items))
	for i, it := range p.Items {
		cursors[i] = domain.EncodeCursor(scope, pos(it))
	}
	info := &model.PageInfo{HasNextPage: p.HasMore}
	if n := len(cursors); n > 0 {
		info.StartCursor, info.EndCursor = &cursors[0], &cursors[n-1]
	}
	return cursors, info
}

func userConnection(p domain.Page[domain.User], scope string) *model.UserConnection {
	cursors, info := edges(p, scope, domain.User.Position)
	c := &model.UserConnection{Nodes: p.Items, PageInfo: info, Edges: make([]model.UserEdge, len(p.Items))}
	for i := range p.Items {
		c.Edges[i] = model.UserEdge{Cursor: cursors[i], Node: &p.Items[i]}
	}
	return c
}

func projectConnection(p domain.Page[domain.Project], scope string) *model.ProjectConnection {
	cursors, info := edges(p, scope, domain.Project.Position)
	c := &model.ProjectConnection{Nodes: p.Items, PageInfo: info, Edges: make([]model.ProjectEdge, len(p.Items))}
	for i := range p.Items {
		c.Edges[i] = model.ProjectEdge{Cursor: cursors[i], Node: &p.Items[i]}
	}
	return c
}

func taskConnection(p domain.Page[domain.Task], scope string) *model.TaskConnection {
	cursors, info := edges(p, scope, domain.Task.Position)
	c := &model.TaskConnection{Nodes: p.Items, PageInfo: info, Edges: make([]model.TaskEdge, len(p.Items))}
	for i := range p.Items {
		c.Edges[i] = model.TaskEdge{Cursor: cursors[i], Node: &p.Items[i]}
	}
	return c
}

func webhookConnection(p domain.Page[domain.Webhook], scope string) *model.WebhookConnection {
	cursors, info := edges(p, scope, domain.Webhook.Position)
	c := &model.WebhookConnection{Nodes: p.Items, PageInfo: info, Edges: make([]model.WebhookEdge, len(p.Items))}
	for i := range p.Items {
		c.Edges[i] = model.WebhookEdge{Cursor: cursors[i], Node: &p.Items[i]}
	}
	return c
}
