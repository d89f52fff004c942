package graph

import (
	"github.com/99designs/gqlgen/graphql"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// field turns an omittable GraphQL input field into a merge-patch field:
// absent stays absent, null stays null (the domain clears a nullable field
// and refuses a required one, with the same errors as over REST).
func field[T any](o graphql.Omittable[*T]) domain.Field[T] {
	v, set := o.ValueOK()
	switch {
	case !set:
		return domain.Field[T]{}
	case v == nil:
		return domain.Null[T]()
	}
	return domain.Set(*v)
}

// The inputs below hand the domain the same unvalidated fields REST reads
// from its bodies; every rule (required fields, the status of a new task,
// the assignee's form) runs in the domain, once for both APIs.

func createProjectFields(in model.CreateProjectInput) domain.ProjectFields {
	return domain.ProjectFields{Name: domain.Set(in.Name), Key: domain.Set(in.Key)}
}

func projectPatch(in model.UpdateProjectInput) domain.ProjectFields {
	return domain.ProjectFields{Name: field(in.Name)}
}

func createTaskFields(in model.CreateTaskInput) domain.TaskFields {
	return domain.TaskFields{
		Title: domain.Set(in.Title), Status: field(in.Status),
		AssigneeID: field(in.AssigneeID), DueAt: field(in.DueAt),
	}
}

func taskPatch(in model.UpdateTaskInput) domain.TaskFields {
	return domain.TaskFields{
		Title: field(in.Title), Status: field(in.Status),
		AssigneeID: field(in.AssigneeID), DueAt: field(in.DueAt),
	}
}

func createWebhookFields(in model.CreateWebhookInput) (domain.WebhookFields, error) {
	f := domain.WebhookFields{URL: domain.Set(in.URL), Events: domain.Set(eventNames(in.Events))}
	var err error
	f.Headers, err = headers(in.Headers)
	return f, err
}

// headers is an omittable list of headers as the map a webhook holds; a
// name given twice is refused, as REST's JSON object cannot carry it.
func headers(o graphql.Omittable[[]domain.Header]) (domain.Field[map[string]string], error) {
	list, set := o.ValueOK()
	switch {
	case !set:
		return domain.Field[map[string]string]{}, nil
	case list == nil:
		return domain.Null[map[string]string](), nil
	}
	m, err := domain.HeaderMap(list)
	return domain.Set(m), err
}

func webhookPatch(in model.UpdateWebhookInput) (domain.WebhookFields, error) {
	p := domain.WebhookFields{URL: field(in.URL), Active: field(in.Active)}
	var err error
	if p.Headers, err = headers(in.Headers); err != nil {
		return p, err
	}
	if events, set := in.Events.ValueOK(); set {
		if events == nil {
			p.Events = domain.Null[[]string]()
		} else {
			p.Events = domain.Set(eventNames(events))
		}
	}
	return p, nil
}

// withSecret is the answer of createWebhook and rotateWebhookSecret, the
// only two that show the signing secret. The Webhook type has no secret
// field, so the webhook itself cannot show it anywhere else.
func withSecret(w domain.Webhook) *model.WebhookWithSecret {
	return &model.WebhookWithSecret{Webhook: &w, Secret: w.Secret}
}

func eventNames(ts []domain.EventType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// optionalInt is an optional Int argument as a domain field: GraphQL does
// not tell an argument left out from one given as null, and both mean "the
// default" here.
func optionalInt(v *int) domain.Field[int64] {
	if v == nil {
		return domain.Field[int64]{}
	}
	return domain.Set(int64(*v))
}

// list turns an omittable list input into a domain field: absent, null or
// the list, as REST's body would carry them.
func list(o graphql.Omittable[[]string]) domain.Field[[]string] {
	v, set := o.ValueOK()
	switch {
	case !set:
		return domain.Field[[]string]{}
	case v == nil:
		return domain.Null[[]string]()
	}
	return domain.Set(v)
}

func createAPIKeyFields(in model.CreateAPIKeyInput) domain.APIKeyFields {
	return domain.APIKeyFields{
		Name: domain.Set(in.Name), Scopes: list(in.Scopes), ProjectIDs: list(in.ProjectIds),
		ExpiresAt: field(in.ExpiresAt), UserID: field(in.UserID),
	}
}
