package graph

import (
	"context"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// node fetches any object by id, the id's prefix naming its kind; the core
// service of that kind applies its own roles and tenancy (a webhook is for
// admins only). An id of no known kind is not found, like an absent one.
func (r *queryResolver) node(ctx context.Context, id string) (model.Node, error) {
	a := actor(ctx)
	switch {
	case domain.IsID(id, domain.PrefixUser):
		return ptr(r.App.Users.Get(ctx, a, id))
	case domain.IsID(id, domain.PrefixProject):
		return ptr(r.App.Projects.Get(ctx, a, id))
	case domain.IsID(id, domain.PrefixTask):
		t, err := r.App.Tasks.Get(ctx, a, id)
		if err != nil {
			return nil, err
		}
		return oneTask(ctx, t), nil
	case domain.IsID(id, domain.PrefixWebhook):
		return ptr(r.App.Webhooks.Get(ctx, a, id))
	case domain.IsID(id, domain.PrefixEvent):
		return ptr(r.App.Events.Get(ctx, a, id))
	case domain.IsID(id, domain.PrefixAPIKey):
		return ptr(r.App.APIKeys.Get(ctx, a, id))
	}
	return nil, domain.NotFound("object", id)
}

// ptr returns a pointer to v, or nil with err: a typed nil pointer inside a
// Node would marshal as an object.
func ptr[T any](v T, err error) (model.Node, error) {
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
