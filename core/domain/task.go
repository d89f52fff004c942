package domain

import (
	"time"
)

// Status is a task's status (docs/api.md#task-status).
type Status string

// The task statuses.
const (
	StatusOpen       Status = "open"
	StatusInProgress Status = "in_progress"
	StatusDone       Status = "done"
	StatusArchived   Status = "archived"
)

// Statuses lists every status, in workflow order.
var Statuses = []Status{StatusOpen, StatusInProgress, StatusDone, StatusArchived}

// Validate checks that s names a status. A status arrives unvalidated from
// either API (a REST body or ?status= filter, a GraphQL enum) and is checked
// here only.
func (s Status) Validate() error {
	for _, st := range Statuses {
		if st == s {
			return nil
		}
	}
	return Invalid("status", "Must be one of open, in_progress, done, archived.")
}

// transitions is the status state machine of docs/api.md#task-status: the one
// table both APIs obey. transitions[from][to] is true when allowed.
var transitions = map[Status]map[Status]bool{
	StatusOpen:       {StatusInProgress: true, StatusDone: true, StatusArchived: true},
	StatusInProgress: {StatusOpen: true, StatusDone: true, StatusArchived: true},
	StatusDone:       {StatusOpen: true, StatusInProgress: true, StatusArchived: true},
	StatusArchived:   {StatusOpen: true},
}

// CanTransition reports whether a task may move from one status to another.
func CanTransition(from, to Status) bool { return transitions[from][to] }

// creatable are the statuses a task may be created with.
var creatable = map[Status]bool{StatusOpen: true, StatusInProgress: true, StatusDone: true}

// Task is a unit of work in a project.
type Task struct {
	ID          string
	WorkspaceID string
	ProjectID   string
	Title       string
	Status      Status
	AssigneeID  *string
	DueAt       *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// TaskFields are a task's writable fields as a request carries them,
// unvalidated. NewTask takes them for a creation and Task.Apply for a merge
// patch, so each rule runs once, in the domain, whichever API the value came
// from.
type TaskFields struct {
	Title      Field[string]
	Status     Field[Status]
	AssigneeID Field[string]
	DueAt      Field[time.Time]
}

// NewTask validates a task about to be created: title required; status
// absent means open, null is refused, and only open, in_progress and done
// may be created; assignee_id and due_at absent or null mean none. That the
// assignee belongs to the workspace is checked by the caller, which can see
// the users.
func NewTask(id, workspaceID, projectID string, in TaskFields, now time.Time) (Task, error) {
	title, err := mandatory("title", in.Title)
	if err != nil {
		return Task{}, err
	}
	if title, err = cleanName("title", title, 500); err != nil {
		return Task{}, err
	}
	status := StatusOpen
	if in.Status.Present {
		if status, err = required("status", in.Status); err != nil {
			return Task{}, err
		}
		if err := status.Validate(); err != nil {
			return Task{}, err
		}
		if !creatable[status] {
			return Task{}, Invalid("status", "A task is created open, in_progress or done; archive it afterwards.")
		}
	}
	assignee := in.AssigneeID.Ptr()
	if err := checkAssigneeID(assignee); err != nil {
		return Task{}, err
	}
	due := in.DueAt.Ptr()
	if err := checkDueAt(due); err != nil {
		return Task{}, err
	}
	now = Timestamp(now)
	return Task{
		ID: id, WorkspaceID: workspaceID, ProjectID: projectID, Title: title, Status: status,
		AssigneeID: assignee, DueAt: TimestampPtr(due), CreatedAt: now, UpdatedAt: now,
	}, nil
}

// NotAnAssignee is the error of an assignee_id that names no user of the
// caller's workspace, whether the id is of the wrong kind (seen here) or
// names nobody there (seen by the caller, which can see the users).
func NotAnAssignee() *Error {
	return Invalid("assignee_id", "Must be the id of a user of this workspace.")
}

func checkAssigneeID(id *string) error {
	if id != nil && !IsID(*id, PrefixUser) {
		return NotAnAssignee()
	}
	return nil
}

func checkDueAt(t *time.Time) error {
	if t != nil {
		return CheckTime("due_at", *t)
	}
	return nil
}

// Apply returns the task with patch applied and what changed. Field values
// are validated first (validation_failed); then the status rules
// (invalid_status_transition): the move must be in the transition table, and
// an archived task accepts no change unless the same patch reopens it. A
// patch that changes nothing is a no-op, whatever the status.
func (t Task) Apply(patch TaskFields, now time.Time) (Task, Changes, error) {
	next := t
	var changes Changes
	if patch.Title.Present {
		v, err := required("title", patch.Title)
		if err != nil {
			return t, nil, err
		}
		if v, err = cleanName("title", v, 500); err != nil {
			return t, nil, err
		}
		if v != t.Title {
			changes = append(changes, Change{Field: "title", Old: t.Title})
			next.Title = v
		}
	}
	if patch.Status.Present {
		v, err := required("status", patch.Status)
		if err != nil {
			return t, nil, err
		}
		if err := v.Validate(); err != nil {
			return t, nil, err
		}
		if v != t.Status {
			changes = append(changes, Change{Field: "status", Old: t.Status})
			next.Status = v
		}
	}
	if patch.AssigneeID.Present {
		v := patch.AssigneeID.Ptr()
		if err := checkAssigneeID(v); err != nil {
			return t, nil, err
		}
		if !equalPtr(v, t.AssigneeID) {
			changes = append(changes, Change{Field: "assignee_id", Old: t.AssigneeID})
			next.AssigneeID = v
		}
	}
	if patch.DueAt.Present {
		if err := checkDueAt(patch.DueAt.Ptr()); err != nil {
			return t, nil, err
		}
		v := TimestampPtr(patch.DueAt.Ptr())
		if !equalTime(v, t.DueAt) {
			changes = append(changes, Change{Field: "due_at", Old: t.DueAt})
			next.DueAt = v
		}
	}
	if len(changes) == 0 {
		return t, nil, nil
	}
	if next.Status != t.Status && !CanTransition(t.Status, next.Status) {
		return t, nil, Errorf(CodeInvalidStatusTransition, "A task cannot move from %s to %s.", t.Status, next.Status)
	}
	if t.Status == StatusArchived && next.Status != StatusOpen {
		return t, nil, Errorf(CodeInvalidStatusTransition, "An archived task cannot be changed; reopen it with \"status\":\"open\" (other fields may change in the same request).")
	}
	next.UpdatedAt = Timestamp(now)
	return next, changes, nil
}

func equalPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func equalTime(a, b *time.Time) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(*b))
}
