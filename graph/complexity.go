package graph

import (
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// Complexity weighs each connection field by the page it asks for: a field
// costs 1, a connection 1 + first × (the cost of what each item selects), so
// that nested connections multiply as their results do, and aliases add up
// (TestEveryConnectionIsWeighed keeps every connection of the schema here). An out-of-range
// first weighs 1: the core refuses it with validation_failed (param first),
// which is the answer the client needs, not a complexity error.
func Complexity() ComplexityRoot {
	var c ComplexityRoot
	c.Query.Users = func(child int, first *int, _ *string) int { return connectionCost(child, first) }
	c.Query.Projects = func(child int, first *int, _ *string) int { return connectionCost(child, first) }
	c.Query.Webhooks = func(child int, first *int, _ *string) int { return connectionCost(child, first) }
	c.Query.Events = func(child int, first *int, _ *string, _ []domain.EventType, _ *string) int {
		return connectionCost(child, first)
	}
	c.Query.APIKeys = func(child int, first *int, _ *string, _ *string) int { return connectionCost(child, first) }
	c.Query.AuditEvents = func(child int, first *int, _ *string, _ *model.AuditEventFilter) int {
		return connectionCost(child, first)
	}
	c.Project.Tasks = func(child int, first *int, _ *string, _ *domain.Status, _ *string, f *model.TaskFilter, _ *model.TaskOrder) int {
		return connectionCost(child, first) + searchCost(f)
	}
	c.Query.Tasks = func(child int, first *int, _ *string, f *model.TaskFilter, _ *model.TaskOrder) int {
		return connectionCost(child, first) + searchCost(f)
	}
	// A count is weighed by what it reads (domain.TaskQuery.CountWeight):
	// every task it counts, unless the projects' counters answer it.
	c.Query.TaskCounts = func(child int, f *model.TaskFilter, by domain.TaskCountGroup) int {
		return child + taskQuery(f, nil).CountWeight(by)
	}
	// A bulk creation answers every task it creates: 1 + what each selects
	// times the items given.
	c.Mutation.CreateTasks = func(child int, _ string, inputs []model.CreateTaskInput) int {
		return 1 + len(inputs)*child
	}
	return c
}

// searchCost is what a task list's search adds to its page: the full-text
// lookups of its words.
func searchCost(f *model.TaskFilter) int {
	if f != nil && f.Query.Value() != nil {
		return domain.SearchWeight
	}
	return 0
}

func connectionCost(child int, first *int) int {
	n, err := pageRequest(first, nil).Size()
	if err != nil {
		n = 1
	}
	return 1 + n*child
}
