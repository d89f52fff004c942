package app

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Events reads the event log: every event of the caller's workspace, in
// log order (the order the changes committed in), for any role.
type Events struct{ d EventsDeps }

// EventsDeps are the ports Events uses.
type EventsDeps struct {
	Log      ports.EventStore
	Projects ports.ProjectStore
	Clock    ports.Clock
}

// NewEvents makes the event log's use cases.
func NewEvents(d EventsDeps) *Events {
	mustHave(map[string]any{"Log": d.Log, "Projects": d.Projects, "Clock": d.Clock})
	return &Events{d: d}
}

// EventListRequest is a page of the log: after a cursor, or after the
// event StartingAfter (not both), optionally filtered by type and project.
type EventListRequest struct {
	Page domain.PageRequest
	// Types keeps the events of any of these types (REST sends one, GraphQL
	// a list); empty keeps every type. Errors name it param "type".
	Types         []string
	ProjectID     *string
	StartingAfter *string
}

// parseEventTypes checks the type filter an event list and a subscription
// share (param "type"), duplicates collapsed.
func parseEventTypes(names []string) ([]domain.EventType, error) {
	var types []domain.EventType
	for _, name := range names {
		t, err := domain.ParseEventType("type", name)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types, nil
}

// eventProject checks the project filter an event list and a subscription
// share (param "project_id"): a project of the caller's workspace, or nil.
func eventProject(ctx context.Context, projects ports.ProjectStore, a domain.Actor, projectID *string) (*string, error) {
	if projectID == nil {
		return nil, nil
	}
	invalid := domain.Invalid("project_id", "Must be the id of a project of this workspace.")
	if !domain.IsID(*projectID, domain.PrefixProject) || !a.SeesProject(*projectID) {
		return nil, invalid
	}
	if _, err := projects.FindProjectByID(ctx, a.WorkspaceID, *projectID); err != nil {
		if domain.IsCode(err, domain.CodeNotFound) {
			return nil, invalid
		}
		return nil, err
	}
	p := *projectID
	return &p, nil
}

func eventListScope(workspaceID string, types []domain.EventType, project *string) string {
	s := "events:" + workspaceID
	if len(types) > 0 {
		names := make([]string, len(types))
		for i, t := range types {
			names[i] = string(t)
		}
		slices.Sort(names)
		s += ":types=" + strings.Join(names, ",")
	}
	if project != nil {
		s += ":project=" + *project
	}
	return s
}

// List returns a page of the log. Events that committed before the call
// are in it: the log is positioned first.
func (s *Events) List(ctx context.Context, a domain.Actor, r EventListRequest) (domain.Page[domain.LoggedEvent], error) {
	var none domain.Page[domain.LoggedEvent]
	if err := a.Require(domain.ScopeEventsRead); err != nil {
		return none, err
	}
	types, err := parseEventTypes(r.Types)
	if err != nil {
		return none, err
	}
	k, err := r.Page.Keyset(eventListScope(a.WorkspaceID, types, r.ProjectID))
	if err != nil {
		return none, err
	}
	project, err := eventProject(ctx, s.d.Projects, a, r.ProjectID)
	if err != nil {
		return none, err
	}
	f := ports.EventFilter{
		WorkspaceID: a.WorkspaceID, Limit: k.Rows(), Types: types, ProjectID: project, ProjectIDs: a.ProjectIDs,
		ProjectsOnly: !a.SeesWorkspaceEvents(),
	}
	if _, err := s.d.Log.PositionEvents(ctx); err != nil {
		return none, err
	}
	switch {
	case r.StartingAfter != nil && r.Page.Cursor != "":
		return none, domain.Invalid("starting_after", "Send either starting_after or cursor, not both.")
	case r.StartingAfter != nil:
		after, err := s.find(ctx, a, *r.StartingAfter)
		if err != nil {
			if domain.IsCode(err, domain.CodeNotFound) {
				return none, domain.Invalid("starting_after", "Must be the id of an event of this workspace still in the log.")
			}
			return none, err
		}
		f.AfterSeq = after.Seq
	case k.After != nil:
		f.AfterSeq = domain.LogSeq(*k.After)
	}
	events, err := s.d.Log.ListEvents(ctx, f)
	if err != nil {
		return none, err
	}
	return domain.NewPage(events, k, domain.LoggedEvent.Position), nil
}

// Get returns one event of the caller's workspace.
func (s *Events) Get(ctx context.Context, a domain.Actor, id string) (domain.LoggedEvent, error) {
	if err := a.Require(domain.ScopeEventsRead); err != nil {
		return domain.LoggedEvent{}, err
	}
	if _, err := s.d.Log.PositionEvents(ctx); err != nil {
		return domain.LoggedEvent{}, err
	}
	return s.find(ctx, a, id)
}

func (s *Events) find(ctx context.Context, a domain.Actor, id string) (domain.LoggedEvent, error) {
	if !domain.IsID(id, domain.PrefixEvent) {
		return domain.LoggedEvent{}, domain.NotFound("event", id)
	}
	e, err := s.d.Log.FindEvent(ctx, a.WorkspaceID, id)
	if err == nil && !a.SeesEvent(e.ProjectID) {
		return domain.LoggedEvent{}, domain.NotFound("event", id)
	}
	return e, err
}

// Purge deletes up to limit events older than retention, except those with
// a pending delivery, and returns how many it deleted.
func (s *Events) Purge(ctx context.Context, retention time.Duration, limit int) (int64, error) {
	return s.d.Log.PurgeEvents(ctx, s.d.Clock.Now().Add(-retention), limit)
}
