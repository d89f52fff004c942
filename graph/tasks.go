package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// taskRefs says which of a task's project and assignee a query selects.
type taskRefs struct{ project, assignee bool }

// selectedTaskRefs is what the current field, whose value is a task (or a
// node that may be one), selects of it, fragments included.
func selectedTaskRefs(ctx context.Context) taskRefs {
	var refs taskRefs
	for _, f := range graphql.CollectFieldsCtx(ctx, []string{typeTask, typeNode}) {
		switch f.Name {
		case fieldProject:
			refs.project = true
		case fieldAssignee:
			refs.assignee = true
		}
	}
	return refs
}

// task makes the GraphQL task of t. The loads of the project and assignee
// that queue selects start now, so that they share a batch with each other
// and with those of the tasks made beside this one; the others load when
// their field asks, which for a page's tasks finds them cached (Project.tasks
// primes the project, and the page's batch queues the assignees).
func (l *loaders) task(ctx context.Context, t domain.Task, queue taskRefs) model.Task {
	projectID := t.ProjectID
	project := func() (domain.Project, error) { return l.projects.Load(ctx, projectID) }
	if queue.project {
		project = l.projects.LoadThunk(ctx, projectID)
	}
	var assignee func() (domain.User, error)
	if id := t.AssigneeID; id != nil {
		assignee = func() (domain.User, error) { return l.users.Load(ctx, *id) }
		if queue.assignee {
			assignee = l.users.LoadThunk(ctx, *id)
		}
	}
	return model.NewTask(t, project, assignee)
}

// oneTask is the GraphQL task of t, returned by the current field.
func oneTask(ctx context.Context, t domain.Task) *model.Task {
	m := loadersOf(ctx).task(ctx, t, selectedTaskRefs(ctx))
	return &m
}

// tasks is the Task list of a mutation's tasks, their loads queued for all
// of them at once, as taskConnection queues a page's.
func (l *loaders) tasks(ctx context.Context, ts []domain.Task, queue taskRefs) []model.Task {
	out := make([]model.Task, len(ts))
	for i, t := range ts {
		out[i] = l.task(ctx, t, queue)
	}
	return out
}

// taskConnection is the connection of a page of tasks. The loads queue
// asks for are queued for every task of the page now (see task), so that the
// tasks, marshalled one after another (marshalInOrder), never wait for a
// batch each: whatever the page's prefetch left out of the cache is then read
// in one batch, for all of them.
func (l *loaders) taskConnection(ctx context.Context, p domain.Page[domain.Task], queue taskRefs) *model.TaskConnection {
	return model.NewTaskConnection(l.tasks(ctx, p.Items, queue), pageInfo(p), p.Cursor)
}
