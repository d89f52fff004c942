package graph

import (
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// pageRequest turns connection arguments into the core's page request. An
// absent or null first is the default, an out-of-range one refused, by the
// domain (validation_failed, param limit, named first here). An absent, null
// or empty after is the first page, as an empty cursor is over REST.
func pageRequest(first *int, after *string) domain.PageRequest {
	req := domain.PageRequest{}
	if first != nil {
		req.Limit = domain.Set(*first)
	}
	if after != nil {
		req.Cursor = *after
	}
	return req
}

// edges returns the cursor of each item of a page (the page's own: the
// next_cursor a REST page ending at that item would have, so both APIs
// accept each other's cursors) and the page's PageInfo.
func edges[T any](p domain.Page[T]) ([]string, *model.PageInfo) {
	cursors := make([]string, len(p.Items))
	for i := range p.Items {
		cursors[i] = p.Cursor(i)
	}
	info := &model.PageInfo{HasNextPage: p.HasMore}
	if n := len(cursors); n > 0 {
		info.StartCursor, info.EndCursor = &cursors[0], &cursors[n-1]
	}
	return cursors, info
}

func userConnection(p domain.Page[domain.User]) *model.UserConnection {
	cursors, info := edges(p)
	c := &model.UserConnection{Nodes: p.Items, PageInfo: info, Edges: make([]model.UserEdge, len(p.Items))}
	for i := range p.Items {
		c.Edges[i] = model.UserEdge{Cursor: cursors[i], Node: &p.Items[i]}
	}
	return c
}

func projectConnection(p domain.Page[domain.Project]) *model.ProjectConnection {
	cursors, info := edges(p)
	c := &model.ProjectConnection{Nodes: p.Items, PageInfo: info, Edges: make([]model.ProjectEdge, len(p.Items))}
	for i := range p.Items {
		c.Edges[i] = model.ProjectEdge{Cursor: cursors[i], Node: &p.Items[i]}
	}
	return c
}

func taskConnection(p domain.Page[domain.Task]) *model.TaskConnection {
	cursors, info := edges(p)
	c := &model.TaskConnection{Nodes: p.Items, PageInfo: info, Edges: make([]model.TaskEdge, len(p.Items))}
	for i := range p.Items {
		c.Edges[i] = model.TaskEdge{Cursor: cursors[i], Node: &p.Items[i]}
	}
	return c
}

func webhookConnection(p domain.Page[domain.Webhook]) *model.WebhookConnection {
	cursors, info := edges(p)
	c := &model.WebhookConnection{Nodes: p.Items, PageInfo: info, Edges: make([]model.WebhookEdge, len(p.Items))}
	for i := range p.Items {
		c.Edges[i] = model.WebhookEdge{Cursor: cursors[i], Node: &p.Items[i]}
	}
	return c
}
