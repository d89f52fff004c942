package app

import (
	"context"
	"slices"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Tasks is the task use cases.
type Tasks struct{ d TasksDeps }

// TasksDeps are the ports Tasks uses: its own store, the projects (which
// hold the tasks and count them), the users (assignees must be members) and
// the recorder of task events.
type TasksDeps struct {
	Tx       ports.Transactor
	Clock    ports.Clock
	IDs      ports.IDGenerator
	Tasks    ports.TaskStore
	Projects ports.ProjectStore
	Users    ports.UserStore
	Events   ports.EventRecorder
	Answers  ports.AnswerStore
}

// NewTasks makes the task use cases.
func NewTasks(d TasksDeps) *Tasks {
	mustHave(map[string]any{
		"Tx": d.Tx, "Clock": d.Clock, "IDs": d.IDs, "Tasks": d.Tasks, "Projects": d.Projects,
		"Users": d.Users, "Events": d.Events, "Answers": d.Answers,
	})
	return &Tasks{d: d}
}

func (s *Tasks) record(ctx context.Context, a domain.Actor, typ domain.EventType, t domain.Task, changes domain.Changes) error {
	return s.d.Events.RecordEvent(ctx, newEvent(s.d.IDs, s.d.Clock, a.WorkspaceID, typ, t, changes))
}

// Create adds a task to a project of the caller's workspace. Members and
// admins only. resource_not_found for an absent or foreign project;
// validation_failed for a bad field, including an assignee who is not a
// member of the workspace (param assignee_id).
func (s *Tasks) Create(ctx context.Context, a domain.Actor, projectID string, in domain.TaskFields) (domain.Task, error) {
	if err := s.checkProject(a, projectID); err != nil {
		return domain.Task{}, err
	}
	t, err := domain.NewTask(s.d.IDs.NewID(domain.PrefixTask), a.WorkspaceID, projectID, in, s.d.Clock.Now())
	if err != nil {
		return domain.Task{}, err
	}
	// One store operation writes the task, its event and its deliveries:
	// on PostgreSQL one statement, one round trip, where a transaction of
	// its own took four or five (docs/performance.md).
	// A keyed request's answer commits with the task, in a transaction
	// of their own.
	ev := newEvent(s.d.IDs, s.d.Clock, a.WorkspaceID, domain.EventTaskCreated, t, nil)
	create := func(ctx context.Context) error {
		return s.d.Events.RecordWith(ctx, ev, func(ctx context.Context, o ports.Outboxed) (int, error) {
			return s.d.Tasks.CreateTaskLogged(ctx, t, o)
		})
	}
	if keyed(ctx) {
		err = s.d.Tx.InTx(ctx, func(ctx context.Context) error {
			if err := claimKey(ctx, s.d.Answers); err != nil {
				return err
			}
			if err := create(ctx); err != nil {
				return err
			}
			return commitAnswer(ctx, s.d.Answers, t)
		})
	} else {
		err = create(ctx)
	}
	return t, s.explain(ctx, a, []domain.Task{t}, false, err)
}

// CreateMany adds 1 to domain.MaxBatchItems tasks to a project in one
// transaction, under the rules of Create: all or nothing, and a bad item
// is validation_failed with its index in param (domain.AtItem). The tasks
// are created a microsecond apart in the order given, so that every list
// by creation shows them in that order, and their task.created events take
// consecutive positions in the log, in the same order.
func (s *Tasks) CreateMany(ctx context.Context, a domain.Actor, projectID string, ins []domain.TaskFields) ([]domain.Task, error) {
	if err := s.checkProject(a, projectID); err != nil {
		return nil, err
	}
	if err := domain.CheckBatchSize(len(ins)); err != nil {
		return nil, err
	}
	now := s.d.Clock.Now()
	ts := make([]domain.Task, len(ins))
	for i, in := range ins {
		t, err := domain.NewTask(s.d.IDs.NewID(domain.PrefixTask), a.WorkspaceID, projectID, in, now.Add(time.Duration(i)*time.Microsecond))
		if err != nil {
			return nil, domain.AtItem(i, err)
		}
		ts[i] = t
	}
	if err := s.insert(ctx, a, ts, true); err != nil {
		return nil, err
	}
	return ts, nil
}

// checkProject applies the rules of a creation that need no read: the
// scope, and a project id the caller's key may see.
func (s *Tasks) checkProject(a domain.Actor, projectID string) error {
	if err := a.Require(domain.ScopeTasksWrite); err != nil {
		return err
	}
	if !domain.IsID(projectID, domain.PrefixProject) || !a.SeesProject(projectID) {
		return domain.NotFound("project", projectID)
	}
	return nil
}

// insert writes new tasks of one project, with their events, in one
// transaction (a bulk creation). The transaction reads
// neither the project nor the assignees: the tasks' foreign keys refuse a
// project or an assignee that is not the workspace's, and only then, on
// that error's path, are they read, to answer which (the project first).
// A bulk creation's errors name the item at fault (domain.AtItem). The
// store counts the tasks into their project.
func (s *Tasks) insert(ctx context.Context, a domain.Actor, ts []domain.Task, bulk bool) error {
	events := make([]domain.Event, len(ts))
	for i, t := range ts {
		events[i] = newEvent(s.d.IDs, s.d.Clock, a.WorkspaceID, domain.EventTaskCreated, t, nil)
	}
	// The transaction is seated among other workspaces' work by what it
	// writes.
	err := s.d.Tx.InTx(ports.WithDBWeight(ctx, len(ts)*domain.CreateWeight), func(ctx context.Context) error {
		if err := claimKey(ctx, s.d.Answers); err != nil {
			return err
		}
		if err := s.d.Tasks.CreateTasks(ctx, ts); err != nil {
			return err
		}
		if err := s.d.Events.RecordEvent(ctx, events...); err != nil {
			return err
		}
		return commitAnswer(ctx, s.d.Answers, ts)
	})
	return s.explain(ctx, a, ts, bulk, err)
}

// explain answers which of a creation's references the foreign keys
// refused (err resource_not_found): the project, else an assignee. Other
// errors, and a creation without assignees, pass as they are.
func (s *Tasks) explain(ctx context.Context, a domain.Actor, ts []domain.Task, bulk bool, err error) error {
	if !domain.IsCode(err, domain.CodeNotFound) || !slices.ContainsFunc(ts, func(t domain.Task) bool { return t.AssigneeID != nil }) {
		return err
	}
	if _, perr := s.d.Projects.FindProjectByID(ctx, a.WorkspaceID, ts[0].ProjectID); perr != nil {
		return perr
	}
	if aerr := s.checkAssignees(ctx, a, ts, bulk); aerr != nil {
		return aerr
	}
	return err
}

// checkAssignees refuses, in one read, an assignee of ts who is not a
// member of the workspace; in a bulk creation the error names the first
// such task's index.
func (s *Tasks) checkAssignees(ctx context.Context, a domain.Actor, ts []domain.Task, bulk bool) error {
	var ids []string
	for _, t := range ts {
		if t.AssigneeID != nil && !slices.Contains(ids, *t.AssigneeID) {
			ids = append(ids, *t.AssigneeID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	users, err := s.d.Users.FindUsersByIDs(ctx, a.WorkspaceID, domain.WellFormedIDs(ids, domain.PrefixUser))
	if err != nil {
		return err
	}
	members := make(map[string]bool, len(users))
	for _, u := range users {
		members[u.ID] = true
	}
	for i, t := range ts {
		if t.AssigneeID != nil && !members[*t.AssigneeID] {
			if !bulk {
				return domain.NotAnAssignee()
			}
			return domain.AtItem(i, domain.NotAnAssignee())
		}
	}
	return nil
}

// checkAssignee refuses an assignee who is not a member of the workspace.
func (s *Tasks) checkAssignee(ctx context.Context, a domain.Actor, id *string) error {
	if id == nil {
		return nil
	}
	if !domain.IsID(*id, domain.PrefixUser) {
		return domain.NotAnAssignee()
	}
	_, err := s.d.Users.FindUserByID(ctx, a.WorkspaceID, *id)
	if domain.IsCode(err, domain.CodeNotFound) {
		return domain.NotAnAssignee()
	}
	return err
}

// Get returns a task of the caller's workspace, or resource_not_found
// (also for a task of a project the caller's key is not restricted to).
func (s *Tasks) Get(ctx context.Context, a domain.Actor, id string) (domain.Task, error) {
	if err := a.Require(domain.ScopeTasksRead); err != nil {
		return domain.Task{}, err
	}
	if !domain.IsID(id, domain.PrefixTask) {
		return domain.Task{}, domain.NotFound("task", id)
	}
	t, err := s.d.Tasks.FindTaskByID(ctx, a.WorkspaceID, id)
	if err == nil && !a.SeesProject(t.ProjectID) {
		return domain.Task{}, domain.NotFound("task", id)
	}
	return t, err
}

// GetMany returns the tasks among ids (absent, foreign or ill-formed ids left
// out).
func (s *Tasks) GetMany(ctx context.Context, a domain.Actor, ids []string) ([]domain.Task, error) {
	if err := a.Require(domain.ScopeTasksRead); err != nil {
		return nil, err
	}
	tasks, err := s.d.Tasks.FindTasksByIDs(ctx, a.WorkspaceID, domain.WellFormedIDs(ids, domain.PrefixTask))
	if err != nil || !a.Restricted() {
		return tasks, err
	}
	out := tasks[:0]
	for _, t := range tasks {
		if a.SeesProject(t.ProjectID) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Update applies a merge patch to a task under the status rules of the
// domain. A patch that changes nothing returns the task as it is, writes
// nothing and emits no event.
func (s *Tasks) Update(ctx context.Context, a domain.Actor, id string, patch domain.TaskFields) (domain.Task, error) {
	if err := a.Require(domain.ScopeTasksWrite); err != nil {
		return domain.Task{}, err
	}
	if !domain.IsID(id, domain.PrefixTask) {
		return domain.Task{}, domain.NotFound("task", id)
	}
	var out domain.Task
	err := s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		t, err := s.d.Tasks.FindTaskByIDForUpdate(ctx, a.WorkspaceID, id)
		if err != nil {
			return err
		}
		if !a.SeesProject(t.ProjectID) {
			return domain.NotFound("task", id)
		}
		// A bad field is reported before any status rule.
		if err := s.checkAssignee(ctx, a, patch.AssigneeID.Ptr()); err != nil {
			return err
		}
		next, changes, err := t.Apply(patch, s.d.Clock.Now())
		if err != nil {
			return err
		}
		out = next
		if len(changes) == 0 {
			return nil
		}
		if err := s.d.Tasks.UpdateTask(ctx, next); err != nil {
			return err
		}
		return s.record(ctx, a, domain.EventTaskUpdated, next, changes)
	})
	return out, err
}

// Delete removes a task (the store counts it out of its project).
func (s *Tasks) Delete(ctx context.Context, a domain.Actor, id string) error {
	if err := a.Require(domain.ScopeTasksWrite); err != nil {
		return err
	}
	if !domain.IsID(id, domain.PrefixTask) {
		return domain.NotFound("task", id)
	}
	return s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		t, err := s.d.Tasks.FindTaskByIDForUpdate(ctx, a.WorkspaceID, id)
		if err != nil {
			return err
		}
		if !a.SeesProject(t.ProjectID) {
			return domain.NotFound("task", id)
		}
		if err := s.d.Tasks.DeleteTask(ctx, a.WorkspaceID, id); err != nil {
			return err
		}
		return s.record(ctx, a, domain.EventTaskDeleted, t, nil)
	})
}
