package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// UsersService reads the workspace's members.
type UsersService struct{ c *Client }

// Me is the user of the client's API key.
func (s *UsersService) Me(ctx context.Context) (*User, error) {
	var u User
	return &u, s.c.do(ctx, http.MethodGet, "/v1/users/me", nil, nil, &u)
}

// List iterates over the workspace's users, oldest first.
func (s *UsersService) List(ctx context.Context, p ListParams) iter.Seq2[User, error] {
	return list[User](ctx, s.c, "/v1/users", toValues(p.query()))
}

// ProjectsService creates, reads and renames projects.
type ProjectsService struct{ c *Client }

// Create creates a project (admin or member).
func (s *ProjectsService) Create(ctx context.Context, p ProjectCreate) (*Project, error) {
	var out Project
	return &out, s.c.do(ctx, http.MethodPost, "/v1/projects", nil, p, &out)
}

// Get reads a project, with its task counts.
func (s *ProjectsService) Get(ctx context.Context, id string) (*Project, error) {
	path, err := pathOf("/v1/projects/%s", id)
	if err != nil {
		return nil, err
	}
	var out Project
	return &out, s.c.do(ctx, http.MethodGet, path, nil, nil, &out)
}

// Update changes a project's name.
func (s *ProjectsService) Update(ctx context.Context, id string, p ProjectUpdate) (*Project, error) {
	path, err := pathOf("/v1/projects/%s", id)
	if err != nil {
		return nil, err
	}
	var out Project
	return &out, s.c.do(ctx, http.MethodPatch, path, nil, p, &out)
}

// List iterates over the projects the key sees, oldest first.
func (s *ProjectsService) List(ctx context.Context, p ListParams) iter.Seq2[Project, error] {
	return list[Project](ctx, s.c, "/v1/projects", toValues(p.query()))
}

// TasksService creates, reads, changes, deletes, lists and counts tasks.
type TasksService struct{ c *Client }

// Create creates a task in the project.
func (s *TasksService) Create(ctx context.Context, projectID string, t TaskCreate) (*Task, error) {
	path, err := pathOf("/v1/projects/%s/tasks", projectID)
	if err != nil {
		return nil, err
	}
	var out Task
	return &out, s.c.do(ctx, http.MethodPost, path, nil, t, &out)
}

// CreateMany creates 1 to 500 tasks in the project in one request: all of
// them or, when one is refused (the error's Param names it, e.g.
// "tasks[3].title"), none. They come back in the order given.
func (s *TasksService) CreateMany(ctx context.Context, projectID string, tasks []TaskCreate) ([]Task, error) {
	path, err := pathOf("/v1/projects/%s/tasks/batch", projectID)
	if err != nil {
		return nil, err
	}
	if tasks == nil {
		tasks = []TaskCreate{} // the server refuses null with its param, as it refuses []
	}
	var out TaskBatch
	if err := s.c.do(ctx, http.MethodPost, path, nil, TaskBatchCreate{Tasks: tasks}, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// Get reads a task.
func (s *TasksService) Get(ctx context.Context, id string) (*Task, error) {
	path, err := pathOf("/v1/tasks/%s", id)
	if err != nil {
		return nil, err
	}
	var out Task
	return &out, s.c.do(ctx, http.MethodGet, path, nil, nil, &out)
}

// Update changes the fields of t that are set: nil pointers and unset
// Nullables are left as they are; nullable.NewNullNullable clears
// assignee_id or due_at.
func (s *TasksService) Update(ctx context.Context, id string, t TaskUpdate) (*Task, error) {
	path, err := pathOf("/v1/tasks/%s", id)
	if err != nil {
		return nil, err
	}
	var out Task
	return &out, s.c.do(ctx, http.MethodPatch, path, nil, t, &out)
}

// Delete deletes a task. A retry after a dropped connection that finds the
// task gone (the first attempt deleted it) succeeds.
func (s *TasksService) Delete(ctx context.Context, id string) error {
	path, err := pathOf("/v1/tasks/%s", id)
	if err != nil {
		return err
	}
	return s.c.do(ctx, http.MethodDelete, path, nil, nil, nil)
}

// TaskListParams filter and order a list of tasks; the zero value lists
// every task the key sees, oldest first.
type TaskListParams struct {
	ListParams
	// ProjectIDs keeps the tasks of any of these projects (at most 50).
	ProjectIDs []string
	// Statuses keeps the tasks in any of these statuses.
	Statuses []TaskStatus
	// AssigneeIDs keeps the tasks assigned to any of these users; "me" is
	// the key's user and "none" unassigned tasks.
	AssigneeIDs []string
	// DueAfter and DueBefore keep the tasks due at or after, before or at
	// a time (a task without due_at never matches); UpdatedAfter those
	// updated after it.
	DueAfter, DueBefore, UpdatedAfter *time.Time
	// Query keeps the tasks whose title has every word of it, as a word or
	// the start of one, ignoring case.
	Query string
	// Sort is created_at (the default), updated_at or due_at, with "-" in
	// front for descending.
	Sort string
}

func (p TaskListParams) query() query {
	q := p.ListParams.query()
	p.filters(q)
	q.str("sort", p.Sort)
	return q
}

func (p TaskListParams) filters(q query) {
	joined(q, "project_id", p.ProjectIDs)
	joined(q, "status", p.Statuses)
	joined(q, "assignee_id", p.AssigneeIDs)
	q.time("due_after", p.DueAfter)
	q.time("due_before", p.DueBefore)
	q.time("updated_after", p.UpdatedAfter)
	q.str("q", p.Query)
}

// List iterates over the tasks that match p.
func (s *TasksService) List(ctx context.Context, p TaskListParams) iter.Seq2[Task, error] {
	return list[Task](ctx, s.c, "/v1/tasks", toValues(p.query()))
}

// TaskCountParams are the tasks to count (TaskListParams' filters; its
// paging and order do not apply) and what to group them by: status,
// assignee_id or project_id.
type TaskCountParams struct {
	TaskListParams
	GroupBy string
}

// Count counts the tasks that match p, in groups.
func (s *TasksService) Count(ctx context.Context, p TaskCountParams) (*TaskCounts, error) {
	q := query{}
	p.filters(q)
	q.str("group_by", p.GroupBy)
	var out TaskCounts
	return &out, s.c.do(ctx, http.MethodGet, "/v1/tasks/counts", toValues(q), nil, &out)
}

// WebhooksService manages webhook endpoints and their deliveries (admin).
type WebhooksService struct{ c *Client }

// Create registers an endpoint. Its signing secret is in the answer only:
// keep it.
func (s *WebhooksService) Create(ctx context.Context, w WebhookCreate) (*WebhookWithSecret, error) {
	var out WebhookWithSecret
	return &out, s.c.do(ctx, http.MethodPost, "/v1/webhooks", nil, w, &out)
}

// Get reads an endpoint (without its secret).
func (s *WebhooksService) Get(ctx context.Context, id string) (*Webhook, error) {
	path, err := pathOf("/v1/webhooks/%s", id)
	if err != nil {
		return nil, err
	}
	var out Webhook
	return &out, s.c.do(ctx, http.MethodGet, path, nil, nil, &out)
}

// Update changes the fields of w that are set.
func (s *WebhooksService) Update(ctx context.Context, id string, w WebhookUpdate) (*Webhook, error) {
	path, err := pathOf("/v1/webhooks/%s", id)
	if err != nil {
		return nil, err
	}
	var out Webhook
	return &out, s.c.do(ctx, http.MethodPatch, path, nil, w, &out)
}

// Delete deletes an endpoint and its pending deliveries.
func (s *WebhooksService) Delete(ctx context.Context, id string) error {
	path, err := pathOf("/v1/webhooks/%s", id)
	if err != nil {
		return err
	}
	return s.c.do(ctx, http.MethodDelete, path, nil, nil, nil)
}

// List iterates over the workspace's endpoints.
func (s *WebhooksService) List(ctx context.Context, p ListParams) iter.Seq2[Webhook, error] {
	return list[Webhook](ctx, s.c, "/v1/webhooks", toValues(p.query()))
}

// RotateSecret gives the endpoint a new secret, in the answer only; with
// PreviousSecretExpiresIn the old one keeps signing beside it for that many
// seconds.
func (s *WebhooksService) RotateSecret(ctx context.Context, id string, r RotateSecret) (*WebhookWithSecret, error) {
	path, err := pathOf("/v1/webhooks/%s/rotate_secret", id)
	if err != nil {
		return nil, err
	}
	var out WebhookWithSecret
	return &out, s.c.do(ctx, http.MethodPost, path, nil, r, &out)
}

// Ping sends the endpoint a webhook.ping event; the delivery comes back
// pending.
func (s *WebhooksService) Ping(ctx context.Context, id string) (*Delivery, error) {
	path, err := pathOf("/v1/webhooks/%s/ping", id)
	if err != nil {
		return nil, err
	}
	var out Delivery
	return &out, s.c.do(ctx, http.MethodPost, path, nil, nil, &out)
}

// DeliveryListParams filter an endpoint's deliveries.
type DeliveryListParams struct {
	ListParams
	// Status keeps the deliveries with this status: pending, succeeded or
	// failed.
	Status string
}

// Deliveries iterates over the endpoint's deliveries.
func (s *WebhooksService) Deliveries(ctx context.Context, id string, p DeliveryListParams) iter.Seq2[Delivery, error] {
	path, err := pathOf("/v1/webhooks/%s/deliveries", id)
	if err != nil {
		return failed[Delivery](err)
	}
	q := p.query()
	q.str("status", p.Status)
	return list[Delivery](ctx, s.c, path, toValues(q))
}

// Redeliver sends a delivery's event to its endpoint again.
func (s *WebhooksService) Redeliver(ctx context.Context, webhookID, deliveryID string) (*Delivery, error) {
	path, err := pathOf("/v1/webhooks/%s/deliveries/%s/redeliver", webhookID, deliveryID)
	if err != nil {
		return nil, err
	}
	var out Delivery
	return &out, s.c.do(ctx, http.MethodPost, path, nil, nil, &out)
}

// APIKeysService manages API keys: a user's own, or any user's for admins.
type APIKeysService struct{ c *Client }

// Create makes a key. Its secret is in this answer only: keep it. (An
// answer replayed for a repeated Idempotency-Key leaves the secret out.)
func (s *APIKeysService) Create(ctx context.Context, k APIKeyCreate) (*APIKeyWithSecret, error) {
	var out APIKeyWithSecret
	return &out, s.c.do(ctx, http.MethodPost, "/v1/api_keys", nil, k, &out)
}

// Get reads a key (without its secret).
func (s *APIKeysService) Get(ctx context.Context, id string) (*APIKey, error) {
	path, err := pathOf("/v1/api_keys/%s", id)
	if err != nil {
		return nil, err
	}
	var out APIKey
	return &out, s.c.do(ctx, http.MethodGet, path, nil, nil, &out)
}

// Update renames a key.
func (s *APIKeysService) Update(ctx context.Context, id string, k APIKeyUpdate) (*APIKey, error) {
	path, err := pathOf("/v1/api_keys/%s", id)
	if err != nil {
		return nil, err
	}
	var out APIKey
	return &out, s.c.do(ctx, http.MethodPatch, path, nil, k, &out)
}

// Revoke revokes a key at once.
func (s *APIKeysService) Revoke(ctx context.Context, id string) error {
	path, err := pathOf("/v1/api_keys/%s", id)
	if err != nil {
		return err
	}
	return s.c.do(ctx, http.MethodDelete, path, nil, nil, nil)
}

// APIKeyListParams filter a list of keys.
type APIKeyListParams struct {
	ListParams
	// UserID keeps one user's keys.
	UserID string
}

// List iterates over the keys the caller may see.
func (s *APIKeysService) List(ctx context.Context, p APIKeyListParams) iter.Seq2[APIKey, error] {
	q := p.query()
	q.str("user_id", p.UserID)
	return list[APIKey](ctx, s.c, "/v1/api_keys", toValues(q))
}

// EventsService reads the event log: every change, in commit order.
type EventsService struct{ c *Client }

// Get reads an event.
func (s *EventsService) Get(ctx context.Context, id string) (*Event, error) {
	path, err := pathOf("/v1/events/%s", id)
	if err != nil {
		return nil, err
	}
	var out Event
	return &out, s.c.do(ctx, http.MethodGet, path, nil, nil, &out)
}

// EventListParams filter the log and say where to start.
type EventListParams struct {
	ListParams
	// Type keeps the events of one type.
	Type EventType
	// ProjectID keeps a project's own events and its tasks'.
	ProjectID string
	// StartingAfter is the id of the last event you processed: the list
	// starts with the one after it. Empty: from the oldest event kept.
	StartingAfter string
}

func (p EventListParams) values() query {
	q := p.query()
	q.str("type", string(p.Type))
	q.str("project_id", p.ProjectID)
	q.str("starting_after", p.StartingAfter)
	return q
}

// List iterates over the events after p.StartingAfter, in log order, up to
// the newest.
func (s *EventsService) List(ctx context.Context, p EventListParams) iter.Seq2[Event, error] {
	return list[Event](ctx, s.c, "/v1/events", toValues(p.values()))
}

// Follow iterates over the events after p.StartingAfter in log order, and
// then over every event that commits later: when it has read the newest, it
// asks again every poll (1 s when 0). It runs until ctx ends or the caller
// stops, through outages: a failure that may pass (the server unreachable,
// a 429, a 5xx) is retried with backoff (FollowBackoff) from the last event
// yielded, so nothing is lost or repeated. It ends early only on an answer
// that asking again cannot change (a revoked key, a starting_after no
// longer in the log), which it yields. To resume after a restart, pass the
// id of the last event you processed as StartingAfter.
func (s *EventsService) Follow(ctx context.Context, p EventListParams, poll time.Duration) iter.Seq2[Event, error] {
	if poll <= 0 {
		poll = time.Second
	}
	return func(yield func(Event, error) bool) {
		failures := 0
		for {
			var failed error
			for e, err := range s.List(ctx, p) {
				if err != nil {
					failed = err
					break
				}
				failures = 0
				if !yield(e, nil) {
					return
				}
				p.StartingAfter = e.ID
			}
			wait := poll
			if failed != nil {
				if ctx.Err() != nil {
					return
				}
				if !passing(failed) {
					yield(Event{}, failed)
					return
				}
				failures++
				wait = followBackoff(failures)
			} else {
				failures = 0
			}
			if sleep(ctx, wait) != nil {
				return
			}
		}
	}
}

// FollowBackoff bounds Follow's wait between two tries after failures:
// half a second after the first, doubling, at most this.
const FollowBackoff = 30 * time.Second

var followBackoff = backoff(500*time.Millisecond, FollowBackoff)

// passing reports whether err may pass if the request is made again: no
// answer at all, or a 408, 429 or 5xx.
func passing(err error) bool {
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		return true
	}
	return apiErr.StatusCode == http.StatusRequestTimeout || apiErr.StatusCode == http.StatusTooManyRequests || apiErr.StatusCode >= 500
}

func toValues(q query) url.Values { return url.Values(q) }

// failed is an iterator that yields err once.
func failed[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}

// AuditService reads the workspace's audit log (admins, with the audit:read
// scope): who changed a key, a role, a webhook or a project, when and from
// where (docs/audit.md).
type AuditService struct{ c *Client }

// AuditListParams filter the audit log; together they AND.
type AuditListParams struct {
	ListParams
	// Actions keeps the records of these actions.
	Actions []AuditEventAction
	// ActorID keeps the records made by a user (usr_…) or an API key (key_…).
	ActorID string
	// TargetID keeps the records about a resource.
	TargetID string
	// CreatedAfter and CreatedBefore bound the records' times (exclusive).
	CreatedAfter, CreatedBefore *time.Time
}

// List iterates over the audit log, newest first.
func (s *AuditService) List(ctx context.Context, p AuditListParams) iter.Seq2[AuditEvent, error] {
	q := p.query()
	joined(q, "action", p.Actions)
	q.str("actor_id", p.ActorID)
	q.str("target_id", p.TargetID)
	q.time("created_after", p.CreatedAfter)
	q.time("created_before", p.CreatedBefore)
	return list[AuditEvent](ctx, s.c, "/v1/audit_events", toValues(q))
}
