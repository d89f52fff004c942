package domain

import "time"

// EventType is a kind of event a webhook can subscribe to (spec section 6).
type EventType string

// The event types.
const (
	EventTaskCreated    EventType = "task.created"
	EventTaskUpdated    EventType = "task.updated"
	EventTaskDeleted    EventType = "task.deleted"
	EventProjectCreated EventType = "project.created"
	EventProjectUpdated EventType = "project.updated"
)

// EventTypes lists every event type.
var EventTypes = []EventType{EventTaskCreated, EventTaskUpdated, EventTaskDeleted, EventProjectCreated, EventProjectUpdated}

// ParseEventType validates an event type name.
func ParseEventType(param, s string) (EventType, error) {
	for _, t := range EventTypes {
		if string(t) == s {
			return t, nil
		}
	}
	return "", Invalid(param, "Must hold only task.created, task.updated, task.deleted, project.created or project.updated.")
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
