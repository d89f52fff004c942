// Package wire holds the public JSON representation of resources: the spec's
// snake_case objects, shared by the REST API and webhook payloads so that the
// same instant and the same resource are rendered identically everywhere.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// Time renders an instant in the one wire format.
func Time(t time.Time) string { return domain.FormatTime(t) }

// TimePtr renders an optional instant; nil stays null.
func TimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := Time(*t)
	return &s
}

// User is the API's User object.
type User struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at"`
}

// FromUser renders a user.
func FromUser(u domain.User) User {
	return User{ID: u.ID, Object: "user", Email: u.Email, Name: u.Name, Role: string(u.Role), CreatedAt: Time(u.CreatedAt)}
}

// Project is the API's Project object; every field is always present.
type Project struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Name      string `json:"name"`
	Key       string `json:"key"`
	TaskCount int    `json:"task_count"`
	// TaskCounts is never nil in what Worktrack writes; events recorded
	// before projects counted their tasks by status lack it.
	TaskCounts *StatusCounts `json:"task_counts"`
	CreatedAt  string        `json:"created_at"`
	UpdatedAt  string        `json:"updated_at"`
}

// StatusCounts is a project's task_counts object.
type StatusCounts struct {
	Open       int `json:"open"`
	InProgress int `json:"in_progress"`
	Done       int `json:"done"`
	Archived   int `json:"archived"`
}

// FromProject renders a project.
func FromProject(p domain.Project) Project {
	c := p.StatusCounts
	return Project{
		ID: p.ID, Object: "project", Name: p.Name, Key: p.Key, TaskCount: p.TaskCount,
		TaskCounts: &StatusCounts{Open: c.Open, InProgress: c.InProgress, Done: c.Done, Archived: c.Archived},
		CreatedAt:  Time(p.CreatedAt), UpdatedAt: Time(p.UpdatedAt),
	}
}

// TaskCounts is the answer of GET /v1/tasks/counts.
type TaskCounts struct {
	Object  string      `json:"object"`
	GroupBy string      `json:"group_by"`
	Total   int         `json:"total"`
	Data    []TaskCount `json:"data"`
}

// TaskCount is one group of TaskCounts; Key is null for unassigned tasks.
type TaskCount struct {
	Key   *string `json:"key"`
	Count int     `json:"count"`
}

// FromTaskCounts renders task counts.
func FromTaskCounts(c domain.TaskCounts) TaskCounts {
	out := TaskCounts{Object: "task_counts", GroupBy: string(c.GroupBy), Total: c.Total, Data: make([]TaskCount, 0, len(c.Groups))}
	for _, g := range c.Groups {
		out.Data = append(out.Data, TaskCount{Key: g.Key, Count: g.Count})
	}
	return out
}

// List is the API's list envelope.
type List[T any] struct {
	Object     string     `json:"object"`
	Data       []T        `json:"data"`
	Pagination Pagination `json:"pagination"`
}

// Created is the answer to a bulk creation: every object created, in the
// order given. It is a list, but not a page: it has no pagination.
type Created[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

// FromCreated renders the objects of a bulk creation with render.
func FromCreated[D, T any](items []D, render func(D) T) Created[T] {
	out := Created[T]{Object: "list", Data: make([]T, 0, len(items))}
	for _, it := range items {
		out.Data = append(out.Data, render(it))
	}
	return out
}

// Pagination is the API's pagination object; next_cursor is null on the
// last page.
type Pagination struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// FromPage renders a page with render applied to each item.
func FromPage[D, T any](p domain.Page[D], render func(D) T) List[T] {
	out := List[T]{Object: "list", Data: make([]T, 0, len(p.Items))}
	for _, it := range p.Items {
		out.Data = append(out.Data, render(it))
	}
	out.Pagination.HasMore = p.HasMore
	if p.HasMore {
		c := p.NextCursor
		out.Pagination.NextCursor = &c
	}
	return out
}

// Task is the API's Task object; assignee_id and due_at are null when unset.
type Task struct {
	ID         string  `json:"id"`
	Object     string  `json:"object"`
	ProjectID  string  `json:"project_id"`
	Title      string  `json:"title"`
	Status     string  `json:"status"`
	AssigneeID *string `json:"assignee_id"`
	DueAt      *string `json:"due_at"`
	CreatedAt  string  `json:"created_at"`
	UpdatedAt  string  `json:"updated_at"`
}

// FromTask renders a task.
func FromTask(t domain.Task) Task {
	return Task{
		ID: t.ID, Object: "task", ProjectID: t.ProjectID, Title: t.Title, Status: string(t.Status),
		AssigneeID: t.AssigneeID, DueAt: TimePtr(t.DueAt),
		CreatedAt: Time(t.CreatedAt), UpdatedAt: Time(t.UpdatedAt),
	}
}

// parseTime reads an instant of the one wire format back.
func parseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("wire: %s %q: %w", field, s, err)
	}
	return t, nil
}

// Task is the task this representation shows, in workspaceID, checked by
// the domain (domain.RestoreTask): what an event's payload recorded.
func (t Task) Task(workspaceID string) (domain.Task, error) {
	out := domain.Task{
		ID: t.ID, WorkspaceID: workspaceID, ProjectID: t.ProjectID, Title: t.Title,
		Status: domain.Status(t.Status), AssigneeID: t.AssigneeID,
	}
	var err error
	if out.CreatedAt, err = parseTime("created_at", t.CreatedAt); err != nil {
		return domain.Task{}, err
	}
	if out.UpdatedAt, err = parseTime("updated_at", t.UpdatedAt); err != nil {
		return domain.Task{}, err
	}
	if t.DueAt != nil {
		due, err := parseTime("due_at", *t.DueAt)
		if err != nil {
			return domain.Task{}, err
		}
		out.DueAt = &due
	}
	return domain.RestoreTask(out)
}

// Project is the project this representation shows, in workspaceID, checked
// by the domain (domain.RestoreProject): what an event's payload recorded.
func (p Project) Project(workspaceID string) (domain.Project, error) {
	out := domain.Project{ID: p.ID, WorkspaceID: workspaceID, Name: p.Name, Key: p.Key, TaskCount: p.TaskCount}
	if c := p.TaskCounts; c != nil {
		out.StatusCounts = domain.StatusCounts{Open: c.Open, InProgress: c.InProgress, Done: c.Done, Archived: c.Archived}
	}
	var err error
	if out.CreatedAt, err = parseTime("created_at", p.CreatedAt); err != nil {
		return domain.Project{}, err
	}
	if out.UpdatedAt, err = parseTime("updated_at", p.UpdatedAt); err != nil {
		return domain.Project{}, err
	}
	return domain.RestoreProject(out)
}

// Marshal is v as JSON the way every body Worktrack writes is: with <, >
// and & as they are, not escaped for embedding in HTML (no body is HTML, and
// "\u003cAPI_KEY\u003e" in a message helps nobody).
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// APIKey is the API's ApiKey object (docs/keys.md); project_ids is null for
// a key that sees every project.
type APIKey struct {
	ID         string   `json:"id"`
	Object     string   `json:"object"`
	Name       string   `json:"name"`
	UserID     string   `json:"user_id"`
	Prefix     string   `json:"prefix"`
	Scopes     []string `json:"scopes"`
	ProjectIDs []string `json:"project_ids"`
	CreatedAt  string   `json:"created_at"`
	ExpiresAt  *string  `json:"expires_at"`
	LastUsedAt *string  `json:"last_used_at"`
	RevokedAt  *string  `json:"revoked_at"`
}

// APIKeyWithSecret is the answer to a key's creation, the one time its
// secret is shown.
type APIKeyWithSecret struct {
	APIKey
	Secret string `json:"secret"`
}

// FromAPIKey renders a key, never its secret.
func FromAPIKey(k domain.APIKey) APIKey {
	return APIKey{
		ID: k.ID, Object: "api_key", Name: k.Name, UserID: k.UserID, Prefix: k.Prefix, Scopes: k.ScopeNames(),
		ProjectIDs: k.ProjectIDs, CreatedAt: Time(k.CreatedAt), ExpiresAt: TimePtr(k.ExpiresAt),
		LastUsedAt: TimePtr(k.LastUsedAt), RevokedAt: TimePtr(k.RevokedAt),
	}
}
