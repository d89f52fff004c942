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

// connection builds the edges and PageInfo of a Relay connection from a
// page: each edge carries the page's own cursor of its item (the next_cursor
// a REST page ending at that item would have, so both APIs accept each
// other's cursors); edge makes one edge of the connection's generated type.
func connection[T, E any](p domain.Page[T], edge func(cursor string, node *T) E) ([]E, *model.PageInfo) {
	edges := make([]E, len(p.Items))
	for i := range p.Items {
		edges[i] = edge(p.Cursor(i), &p.Items[i])
	}
	return edges, pageInfo(p)
}

// pageInfo is the PageInfo of a page: its first and last items' cursors.
func pageInfo[T any](p domain.Page[T]) *model.PageInfo {
	info := &model.PageInfo{HasNextPage: p.HasMore}
	if n := len(p.Items); n > 0 {
		start, end := p.Cursor(0), p.Cursor(n-1)
		info.StartCursor, info.EndCursor = &start, &end
	}
	return info
}

func userConnection(p domain.Page[domain.User]) *model.UserConnection {
	edges, info := connection(p, func(c string, n *domain.User) model.UserEdge { return model.UserEdge{Cursor: c, Node: n} })
	return &model.UserConnection{Nodes: p.Items, Edges: edges, PageInfo: info}
}

func projectConnection(p domain.Page[domain.Project]) *model.ProjectConnection {
	edges, info := connection(p, func(c string, n *domain.Project) model.ProjectEdge { return model.ProjectEdge{Cursor: c, Node: n} })
	return &model.ProjectConnection{Nodes: p.Items, Edges: edges, PageInfo: info}
}

func webhookConnection(p domain.Page[domain.Webhook]) *model.WebhookConnection {
	edges, info := connection(p, func(c string, n *domain.Webhook) model.WebhookEdge { return model.WebhookEdge{Cursor: c, Node: n} })
	return &model.WebhookConnection{Nodes: p.Items, Edges: edges, PageInfo: info}
}

func apiKeyConnection(p domain.Page[domain.APIKey]) *model.APIKeyConnection {
	edges, info := connection(p, func(c string, n *domain.APIKey) model.APIKeyEdge { return model.APIKeyEdge{Cursor: c, Node: n} })
	return &model.APIKeyConnection{Nodes: p.Items, Edges: edges, PageInfo: info}
}
