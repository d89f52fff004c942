package client

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Task is the task a task.* event is about, as the change left it (for
// task.deleted, as it was before).
func (e Event) Task() (*Task, error) {
	var t Task
	return &t, e.decode("task.", &t)
}

// Project is the project a project.* event is about, as the change left it.
func (e Event) Project() (*Project, error) {
	var p Project
	return &p, e.decode("project.", &p)
}

// Webhook is the webhook a webhook.* event is about (never its secret;
// its headers' names only).
func (e Event) Webhook() (*Webhook, error) {
	var w Webhook
	return &w, e.decode("webhook.", &w)
}

// decode reads the event's data into v when the event's type has prefix.
func (e Event) decode(prefix string, v any) error {
	if !strings.HasPrefix(string(e.Type), prefix) {
		return fmt.Errorf("worktrack: event %s is %s: its data is not a %s", e.ID, e.Type, strings.TrimSuffix(prefix, "."))
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("worktrack: event %s: decoding its data: %w", e.ID, err)
	}
	return nil
}
