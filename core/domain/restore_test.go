package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// Every Restore function accepts what the domain's constructors make, and
// refuses an entity that breaks one of its invariants, with an error that
// is no domain error (the edges answer internal_error).
func TestRestoreRefusesBrokenInvariants(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	ws, prj, usr := domain.NewID(domain.PrefixWorkspace), domain.NewID(domain.PrefixProject), domain.NewID(domain.PrefixUser)
	task := domain.Task{ID: domain.NewID(domain.PrefixTask), WorkspaceID: ws, ProjectID: prj, Title: "T",
		Status: domain.StatusOpen, CreatedAt: now, UpdatedAt: now}
	project := domain.Project{ID: prj, WorkspaceID: ws, Name: "P", Key: "PK", CreatedAt: now, UpdatedAt: now}
	user := domain.User{ID: usr, WorkspaceID: ws, Email: "a@x.test", Name: "A", Role: domain.RoleMember, CreatedAt: now}
	hook := domain.Webhook{ID: domain.NewID(domain.PrefixWebhook), WorkspaceID: ws, URL: "https://x.test/h", Active: true,
		Events: []domain.EventType{domain.EventTaskCreated}, Secret: domain.NewWebhookSecret(), CreatedAt: now, UpdatedAt: now}
	delivery := domain.Delivery{ID: domain.NewID(domain.PrefixDelivery), WorkspaceID: ws, WebhookID: hook.ID,
		EventID: domain.NewID(domain.PrefixEvent), Status: domain.DeliveryPending, CreatedAt: now}
	event := domain.LoggedEvent{ID: delivery.EventID, WorkspaceID: ws, ProjectID: prj, Type: domain.EventTaskCreated,
		CreatedAt: now, Payload: []byte(`{}`)}
	key := domain.APIKey{ID: domain.NewID(domain.PrefixAPIKey), WorkspaceID: ws, UserID: usr, SecretHash: "h",
		Prefix: "wtk_abcdefgh", Scopes: []domain.Scope{domain.ScopeAll}, CreatedAt: now}
	workspace := domain.Workspace{ID: ws, Name: "W", CreatedAt: now}

	check := func(name string, err error, wantOK bool) {
		t.Helper()
		switch {
		case wantOK && err != nil:
			t.Errorf("%s: refused a valid entity: %v", name, err)
		case !wantOK && err == nil:
			t.Errorf("%s: accepted a broken entity", name)
		case !wantOK && isDomainError(err):
			t.Errorf("%s: a corrupt row is no client's fault, but got domain error %v", name, err)
		case !wantOK && !strings.Contains(err.Error(), "stored"):
			t.Errorf("%s: the error should say what was stored: %v", name, err)
		}
	}
	with := func(f func(*domain.Task)) domain.Task { c := task; f(&c); return c }
	restore := func(t domain.Task) error { _, err := domain.RestoreTask(t); return err }
	check("task", restore(task), true)
	check("task with a project id of another kind", restore(with(func(t *domain.Task) { t.ProjectID = usr })), false)
	check("task with an unknown status", restore(with(func(t *domain.Task) { t.Status = "blocked" })), false)
	check("task with an empty title", restore(with(func(t *domain.Task) { t.Title = "" })), false)
	bad := "nobody"
	check("task with a malformed assignee", restore(with(func(t *domain.Task) { t.AssigneeID = &bad })), false)
	check("task updated before it was created", restore(with(func(t *domain.Task) { t.UpdatedAt = now.Add(-time.Second) })), false)

	_, err := domain.RestoreProject(project)
	check("project", err, true)
	p := project
	p.Key = "lower"
	_, err = domain.RestoreProject(p)
	check("project with a malformed key", err, false)
	p = project
	p.TaskCount = -1
	_, err = domain.RestoreProject(p)
	check("project with a negative task count", err, false)

	_, err = domain.RestoreUser(user)
	check("user", err, true)
	u := user
	u.Role = "owner"
	_, err = domain.RestoreUser(u)
	check("user with an unknown role", err, false)

	_, err = domain.RestoreWebhook(hook)
	check("webhook", err, true)
	h := hook
	h.Events = []domain.EventType{"task.exploded"}
	_, err = domain.RestoreWebhook(h)
	check("webhook with an unknown event type", err, false)
	h = hook
	h.Secret = "plain"
	_, err = domain.RestoreWebhook(h)
	check("webhook with a malformed secret", err, false)
	h = hook
	h.Active = false
	_, err = domain.RestoreWebhook(h)
	check("inactive webhook without a reason", err, false)
	h.DisabledReason, h.DisabledAt = domain.DisabledGone, &now
	_, err = domain.RestoreWebhook(h)
	check("webhook disabled as gone", err, true)
	h.Active = true
	_, err = domain.RestoreWebhook(h)
	check("active webhook with a reason", err, false)
	h = hook
	h.Headers = map[string]string{"Host": "evil.test"}
	_, err = domain.RestoreWebhook(h)
	check("webhook with a reserved header", err, false)

	_, err = domain.RestoreDelivery(delivery)
	check("delivery", err, true)
	d := delivery
	d.Status = "lost"
	_, err = domain.RestoreDelivery(d)
	check("delivery with an unknown status", err, false)

	_, err = domain.RestoreLoggedEvent(event)
	check("event", err, true)
	e := event
	e.Payload = nil
	_, err = domain.RestoreLoggedEvent(e)
	check("event without a payload", err, false)

	_, err = domain.RestoreAPIKey(key)
	check("api key", err, true)
	k := key
	k.SecretHash = ""
	_, err = domain.RestoreAPIKey(k)
	check("api key without a hash", err, false)
	k = key
	k.Scopes = []domain.Scope{"tasks:delete"}
	_, err = domain.RestoreAPIKey(k)
	check("api key with an unknown scope", err, false)
	k = key
	k.ProjectIDs = []string{"usr_x"}
	_, err = domain.RestoreAPIKey(k)
	check("api key restricted to a non-project", err, false)

	_, err = domain.RestoreWorkspace(workspace)
	check("workspace", err, true)
	w := workspace
	w.CreatedAt = time.Time{}
	_, err = domain.RestoreWorkspace(w)
	check("workspace without a creation time", err, false)
}

func isDomainError(err error) bool {
	_, ok := domain.AsError(err)
	return ok
}
