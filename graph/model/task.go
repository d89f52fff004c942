package model

import "github.com/worktrack/worktrack/core/domain"

// Task is a task as GraphQL serves it: the core's task, with its project and
// assignee read through the request's dataloaders.
//
// Project and Assignee are plain methods, not resolvers, on purpose. gqlgen
// runs each resolver field through its field middleware on a goroutine of
// its own; for the thousand tasks of a dashboard's projects × tasks query
// that machinery, not the data, was a third of the query's CPU and most of
// its garbage. A plain method runs on the task's own goroutine. The loads
// behind it are queued when the task is made (graph's loaders.task), before
// gqlgen walks the fields, so the tasks of one list still share one batch.
type Task struct {
	domain.Task
	project  func() (domain.Project, error)
	assignee func() (domain.User, error)
}

// NewTask makes the GraphQL task of t; project and assignee give the task's
// project and its assignee (never called when it has none).
func NewTask(t domain.Task, project func() (domain.Project, error), assignee func() (domain.User, error)) Task {
	return Task{Task: t, project: project, assignee: assignee}
}

// Project is the task's project, as it is now.
func (t *Task) Project() (*domain.Project, error) {
	p, err := t.project()
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// Assignee is the task's assignee, as the user is now, or nil.
func (t *Task) Assignee() (*domain.User, error) {
	if t.AssigneeID == nil {
		return nil, nil
	}
	u, err := t.assignee()
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// TaskConnection is a page of tasks. Its edges, and the cursor each carries,
// are made only when the query selects them: a cursor costs a checksum and
// an encoding, and a dashboard reading nodes would pay them for nothing.
type TaskConnection struct {
	Nodes    []Task
	PageInfo *PageInfo
	cursor   func(i int) string
}

// NewTaskConnection makes a connection of nodes; cursor gives the cursor of
// the node at i.
func NewTaskConnection(nodes []Task, info *PageInfo, cursor func(i int) string) *TaskConnection {
	return &TaskConnection{Nodes: nodes, PageInfo: info, cursor: cursor}
}

// Edges are the connection's edges, each with its node's cursor.
func (c *TaskConnection) Edges() []TaskEdge {
	edges := make([]TaskEdge, len(c.Nodes))
	for i := range c.Nodes {
		edges[i] = TaskEdge{Cursor: c.cursor(i), Node: &c.Nodes[i]}
	}
	return edges
}
