package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// eventPayload is an event's JSON document (the payload its deliveries
// carry), with data in the shape of the resource it is about (T: wire.Task
// or wire.Project), so that GraphQL reads what REST and webhooks write.
type eventPayload[T any] struct {
	Data               T               `json:"data"`
	PreviousAttributes json.RawMessage `json:"previous_attributes"`
}

func payloadOf[T any](e *domain.LoggedEvent) (eventPayload[T], error) {
	var p eventPayload[T]
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		return p, fmt.Errorf("graph: event %s: %w", e.ID, err)
	}
	return p, nil
}

// eventTask is the task as a task.* event's data shows it.
func eventTask(e *domain.LoggedEvent) (*domain.Task, error) {
	if !strings.HasPrefix(string(e.Type), "task.") {
		return nil, nil
	}
	p, err := payloadOf[wire.Task](e)
	if err != nil {
		return nil, err
	}
	t, err := p.Data.Task(e.WorkspaceID)
	if err != nil {
		return nil, fmt.Errorf("graph: event %s: %w", e.ID, err)
	}
	return &t, nil
}

// eventProject is the project as a project.* event's data shows it.
func eventProject(e *domain.LoggedEvent) (*domain.Project, error) {
	if !strings.HasPrefix(string(e.Type), "project.") {
		return nil, nil
	}
	p, err := payloadOf[wire.Project](e)
	if err != nil {
		return nil, err
	}
	pr, err := p.Data.Project(e.WorkspaceID)
	if err != nil {
		return nil, fmt.Errorf("graph: event %s: %w", e.ID, err)
	}
	return &pr, nil
}

// eventWebhook is the webhook as a webhook.* event's data shows it.
func eventWebhook(e *domain.LoggedEvent) (*domain.Webhook, error) {
	if !strings.HasPrefix(string(e.Type), "webhook.") {
		return nil, nil
	}
	p, err := payloadOf[wire.Webhook](e)
	if err != nil {
		return nil, err
	}
	w, err := p.Data.Webhook(e.WorkspaceID)
	if err != nil {
		return nil, fmt.Errorf("graph: event %s: %w", e.ID, err)
	}
	return &w, nil
}

// previousAttributes is the payload's previous_attributes, nil when absent.
func previousAttributes(e *domain.LoggedEvent) (json.RawMessage, error) {
	p, err := payloadOf[json.RawMessage](e)
	if err != nil || len(p.PreviousAttributes) == 0 {
		return nil, err
	}
	return p.PreviousAttributes, nil
}

func eventConnection(p domain.Page[domain.LoggedEvent]) *model.EventConnection {
	edges, info := connection(p, func(c string, n *domain.LoggedEvent) model.EventEdge { return model.EventEdge{Cursor: c, Node: n} })
	return &model.EventConnection{Nodes: p.Items, Edges: edges, PageInfo: info}
}

// subscribeEvents starts Subscription.events. A subscription refused by
// the core gets an error message (not a result) and no events; one that
// ends on the core's account (subscriber_too_slow) ends with an error
// message after its events.
func subscribeEvents(ctx context.Context, a *app.App, types []domain.EventType, projectID *string, after *string) <-chan *domain.LoggedEvent {
	req := app.SubscribeRequest{ProjectID: projectID, After: after}
	for _, t := range types {
		req.Types = append(req.Types, string(t))
	}
	req.Ended = func(err error) { transport.AddSubscriptionError(ctx, PresentError(ctx, err)) }
	events, err := a.Live.Subscribe(ctx, actor(ctx), req)
	if err != nil {
		// An error message, not a result: the subscription never started.
		transport.AddSubscriptionError(ctx, PresentError(ctx, err))
		closed := make(chan *domain.LoggedEvent)
		close(closed)
		return closed
	}
	return events
}
