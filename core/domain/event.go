package domain

import "time"

// EventType is a kind of event a webhook can subscribe to (docs/api.md#webhooks).
type EventType string

// The event types.
const (
	EventTaskCreated    EventType = "task.created"
	EventTaskUpdated    EventType = "task.updated"
	EventTaskDeleted    EventType = "task.deleted"
	EventProjectCreated EventType = "project.created"
	EventProjectUpdated EventType = "project.updated"
	// EventWebhookDisabled: a webhook was disabled for failing, or by a
	// 410; data is the webhook (never its secret).
	EventWebhookDisabled EventType = "webhook.disabled"
	// EventWebhookPing is a ping's delivery (POST /v1/webhooks/{id}/ping):
	// sent to one webhook, never subscribed to, never in the event log.
	EventWebhookPing EventType = "webhook.ping"
)

// EventTypes lists every event type a webhook can subscribe to.
var EventTypes = []EventType{
	EventTaskCreated, EventTaskUpdated, EventTaskDeleted, EventProjectCreated, EventProjectUpdated, EventWebhookDisabled,
}

// ParseEventType validates an event type name.
func ParseEventType(param, s string) (EventType, error) {
	for _, t := range EventTypes {
		if string(t) == s {
			return t, nil
		}
	}
	return "", Invalid(param, "Must hold only task.created, task.updated, task.deleted, project.created, project.updated or webhook.disabled.")
}

// Event is something that happened to a task or project. Data is the Task or
// Project as it is after the change (for task.deleted, as it was before);
// Previous lists what an update changed, with the old values.
type Event struct {
	ID          string
	WorkspaceID string
	Type        EventType
	CreatedAt   time.Time
	Data        any
	Previous    Changes
}

// ProjectID is the project the event concerns: the project itself, or the
// task's project; "" for a webhook's events, which concern the workspace.
func (e Event) ProjectID() string {
	switch d := e.Data.(type) {
	case Task:
		return d.ProjectID
	case Project:
		return d.ID
	}
	return ""
}

// LoggedEvent is an event as the event log holds it: its log position (Seq,
// assigned after it committed, in commit order) and the exact JSON document
// its deliveries carry.
type LoggedEvent struct {
	ID          string
	WorkspaceID string
	Type        EventType
	ProjectID   string
	CreatedAt   time.Time
	Seq         int64
	Payload     []byte
}

// Position of a logged event in its lists: the log is ordered by position,
// not by created_at. The position takes the place of the instant in the
// cursor (the cursor format is every list's).
func (e LoggedEvent) Position() Position {
	return Position{At: time.UnixMicro(e.Seq).UTC(), ID: e.ID}
}

// LogSeq is the log position a cursor of the event log names.
func LogSeq(p Position) int64 { return p.At.UnixMicro() }
