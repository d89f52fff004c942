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

func projectPatch(in model.UpdateProjectInput) domain.ProjectPatch {
	return domain.ProjectPatch{Name: field(in.Name)}
}

func taskPatch(in model.UpdateTaskInput) domain.TaskPatch {
	return domain.TaskPatch{
		Title: field(in.Title), Status: field(in.Status),
		AssigneeID: field(in.AssigneeID), DueAt: field(in.DueAt),
	}
}

// taskInput reads createTask's input as REST reads POST …/tasks: a null
// status is validation_failed (the default applies only when it is absent);
// a null assigneeId or dueAt means none.
func taskInput(in model.CreateTaskInput) (domain.TaskInput, error) {
	out := domain.TaskInput{Title: in.Title}
	if s := field(in.Status); s.Null {
		return out, domain.Invalid("status", "status must not be null")
	} else if s.Present {
		out.Status = s.Value
	}
	out.AssigneeID = valueOrNil(field(in.AssigneeID))
	out.DueAt = valueOrNil(field(in.DueAt))
	return out, nil
}

func valueOrNil[T any](f domain.Field[T]) *T {
	if !f.Present || f.Null {
		return nil
	}
	return &f.Value
}

func webhookPatch(in model.UpdateWebhookInput) domain.WebhookPatch {
	p := domain.WebhookPatch{URL: field(in.URL), Active: field(in.Active)}
	if events, set := in.Events.ValueOK(); set {
		if events == nil {
			p.Events = domain.Null[[]string]()
		} else {
			p.Events = domain.Set(eventNames(events))
		}
	}
	return p
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
