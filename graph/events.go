package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// eventDocument is the part of an event's JSON document (the payload its
// deliveries carry) that the Event type shows as fields.
type eventDocument struct {
	Data struct {
		ID         string  `json:"id"`
		ProjectID  string  `json:"project_id"`
		Title      string  `json:"title"`
		Status     string  `json:"status"`
		AssigneeID *string `json:"assignee_id"`
		DueAt      *string `json:"due_at"`
		Name       string  `json:"name"`
		Key        string  `json:"key"`
		TaskCount  int     `json:"task_count"`
		CreatedAt  string  `json:"created_at"`
		UpdatedAt  string  `json:"updated_at"`
	} `json:"data"`
	PreviousAttributes json.RawMessage `json:"previous_attributes"`
}

func documentOf(e *domain.LoggedEvent) (eventDocument, error) {
	var d eventDocument
	if err := json.Unmarshal(e.Payload, &d); err != nil {
		return d, fmt.Errorf("graph: event %s: %w", e.ID, err)
	}
	return d, nil
}

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// eventTask is the task as a task.* event's data shows it.
func eventTask(e *domain.LoggedEvent) (*domain.Task, error) {
	if !strings.HasPrefix(string(e.Type), "task.") {
		return nil, nil
	}
	d, err := documentOf(e)
	if err != nil {
		return nil, err
	}
	t := &domain.Task{
		ID: d.Data.ID, WorkspaceID: e.WorkspaceID, ProjectID: d.Data.ProjectID, Title: d.Data.Title,
		Status: domain.Status(d.Data.Status), AssigneeID: d.Data.AssigneeID,
	}
	if t.CreatedAt, err = parseTime(d.Data.CreatedAt); err != nil {
		return nil, err
	}
	if t.UpdatedAt, err = parseTime(d.Data.UpdatedAt); err != nil {
		return nil, err
	}
	if d.Data.DueAt != nil {
		due, err := parseTime(*d.Data.DueAt)
		if err != nil {
			return nil, err
		}
		t.DueAt = &due
	}
	return t, nil
}

// eventProject is the project as a project.* event's data shows it.
func eventProject(e *domain.LoggedEvent) (*domain.Project, error) {
	if !strings.HasPrefix(string(e.Type), "project.") {
		return nil, nil
	}
	d, err := documentOf(e)
	if err != nil {
		return nil, err
	}
	p := &domain.Project{ID: d.Data.ID, WorkspaceID: e.WorkspaceID, Name: d.Data.Name, Key: d.Data.Key, TaskCount: d.Data.TaskCount}
	if p.CreatedAt, err = parseTime(d.Data.CreatedAt); err != nil {
		return nil, err
	}
	if p.UpdatedAt, err = parseTime(d.Data.UpdatedAt); err != nil {
		return nil, err
	}
	return p, nil
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
	req := app.SubscribeRequest{TypesParam: "types", ProjectID: projectID, ProjectParam: "projectId", After: after, AfterParam: "after"}
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
