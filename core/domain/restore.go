package domain

import (
	"fmt"
	"strings"
	"time"
)

// The Restore functions rebuild entities read from storage: the adapter
// fills the fields, and the domain checks the invariants that every stored
// entity holds (ids of their kind, known enum values, times set), so that no
// invalid entity exists in memory, whatever the rows hold. A failure means
// storage was corrupted or written by something else: it is no client's
// fault, and the edges answer internal_error.

// RestoreWorkspace checks a workspace read from storage.
func RestoreWorkspace(w Workspace) (Workspace, error) {
	c := storedCheck{kind: "workspace", id: w.ID}
	c.isID(w.ID, PrefixWorkspace)
	c.need(strings.TrimSpace(w.Name) != "", "an empty name")
	c.setTime(w.CreatedAt)
	return w, c.err
}

// RestoreUser checks a user read from storage.
func RestoreUser(u User) (User, error) {
	c := storedCheck{kind: "user", id: u.ID}
	c.isID(u.ID, PrefixUser)
	c.isID(u.WorkspaceID, PrefixWorkspace)
	c.need(u.Email != "", "no email")
	c.need(u.Role.rank() > 0, "an unknown role")
	c.setTime(u.CreatedAt)
	return u, c.err
}

// RestoreAPIKey checks an API key read from storage.
func RestoreAPIKey(k APIKey) (APIKey, error) {
	c := storedCheck{kind: "api key", id: k.ID}
	c.isID(k.ID, PrefixAPIKey)
	c.isID(k.WorkspaceID, PrefixWorkspace)
	c.isID(k.UserID, PrefixUser)
	c.need(k.SecretHash != "", "no secret hash")
	c.need(strings.HasPrefix(k.Prefix, SecretPrefix), "a malformed prefix")
	_, err := ParseScopes(scopeNames(k.Scopes))
	c.need(err == nil, "no scopes, or an unknown one")
	for _, p := range k.ProjectIDs {
		c.isID(p, PrefixProject)
	}
	c.setTime(k.CreatedAt)
	return k, c.err
}

// RestoreProject checks a project read from storage.
func RestoreProject(p Project) (Project, error) {
	c := storedCheck{kind: "project", id: p.ID}
	c.isID(p.ID, PrefixProject)
	c.isID(p.WorkspaceID, PrefixWorkspace)
	c.need(projectKeyRe.MatchString(p.Key), "a malformed key")
	c.need(strings.TrimSpace(p.Name) != "", "an empty name")
	c.need(p.TaskCount >= 0, "a negative task count")
	sc := p.StatusCounts
	c.need(sc.Open >= 0 && sc.InProgress >= 0 && sc.Done >= 0 && sc.Archived >= 0, "a negative status count")
	// Zero counts with tasks are allowed: the project of an event recorded
	// before projects counted their tasks by status.
	c.need(sc == (StatusCounts{}) || sc.Total() == p.TaskCount, "status counts that do not add up to the task count")
	c.updatedAfterCreated(p.CreatedAt, p.UpdatedAt)
	return p, c.err
}

// RestoreTask checks a task read from storage.
func RestoreTask(t Task) (Task, error) {
	c := storedCheck{kind: "task", id: t.ID}
	c.isID(t.ID, PrefixTask)
	c.isID(t.WorkspaceID, PrefixWorkspace)
	c.isID(t.ProjectID, PrefixProject)
	c.need(t.Title != "", "an empty title")
	c.need(t.Status.Validate() == nil, "an unknown status")
	if t.AssigneeID != nil {
		c.isID(*t.AssigneeID, PrefixUser)
	}
	c.updatedAfterCreated(t.CreatedAt, t.UpdatedAt)
	return t, c.err
}

// RestoreWebhook checks a webhook read from storage; its event list must
// hold known types only.
func RestoreWebhook(w Webhook) (Webhook, error) {
	c := storedCheck{kind: "webhook", id: w.ID}
	c.isID(w.ID, PrefixWebhook)
	c.isID(w.WorkspaceID, PrefixWorkspace)
	c.need(w.URL != "", "no URL")
	c.need(len(w.Events) > 0, "no event types")
	for _, e := range w.Events {
		_, err := ParseEventType("events", string(e))
		c.need(err == nil, "an unknown event type")
	}
	c.need(strings.HasPrefix(w.Secret, WebhookSecretPrefix), "a malformed secret")
	c.need(w.Active == (w.DisabledReason == ""), "an inactive webhook without a reason, or an active one with one")
	c.need(w.FailedAttempts >= 0, "a negative count of failed attempts")
	_, err := ParseWebhookHeaders(w.Headers)
	c.need(err == nil, "headers a webhook may not have")
	c.updatedAfterCreated(w.CreatedAt, w.UpdatedAt)
	return w, c.err
}

// RestoreDelivery checks a webhook delivery read from storage.
func RestoreDelivery(d Delivery) (Delivery, error) {
	c := storedCheck{kind: "webhook delivery", id: d.ID}
	c.isID(d.ID, PrefixDelivery)
	c.isID(d.WorkspaceID, PrefixWorkspace)
	c.isID(d.WebhookID, PrefixWebhook)
	c.isID(d.EventID, PrefixEvent)
	c.need(d.Status.Validate() == nil, "an unknown status")
	c.need(d.Attempts >= 0, "a negative attempt count")
	c.setTime(d.CreatedAt)
	return d, c.err
}

// RestoreLoggedEvent checks an event read from the log.
func RestoreLoggedEvent(e LoggedEvent) (LoggedEvent, error) {
	c := storedCheck{kind: "event", id: e.ID}
	c.isID(e.ID, PrefixEvent)
	c.isID(e.WorkspaceID, PrefixWorkspace)
	if e.ProjectID != "" {
		c.isID(e.ProjectID, PrefixProject)
	}
	_, err := ParseEventType("type", string(e.Type))
	c.need(err == nil, "an unknown type")
	c.need(len(e.Payload) > 0, "no payload")
	c.setTime(e.CreatedAt)
	return e, c.err
}

// storedCheck collects the first invariant an entity read from storage
// breaks.
type storedCheck struct {
	kind, id string
	err      error
}

func (c *storedCheck) need(ok bool, breach string) {
	if !ok && c.err == nil {
		c.err = fmt.Errorf("domain: the stored %s %q has %s", c.kind, c.id, breach)
	}
}

func (c *storedCheck) isID(id, prefix string) {
	c.need(IsID(id, prefix), "a malformed "+prefix+"_ id")
}

func (c *storedCheck) setTime(t time.Time) { c.need(!t.IsZero(), "no creation time") }

func (c *storedCheck) updatedAfterCreated(created, updated time.Time) {
	c.setTime(created)
	c.need(!updated.Before(created), "an update time before its creation time")
}

func scopeNames(ss []Scope) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
