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
	c.Project.Tasks = func(child int, first *int, _ *string, _ *domain.Status, _ *string, _ *model.TaskFilter, _ *model.TaskOrder) int {
		return connectionCost(child, first)
	}
	c.Query.Tasks = func(child int, first *int, _ *string, _ *model.TaskFilter, _ *model.TaskOrder) int {
		return connectionCost(child, first)
	}
	// A count reads every task it counts, as a full page reads its hundred:
	// it is weighed as one.
	c.Query.TaskCounts = func(child int, _ *model.TaskFilter, _ domain.TaskCountGroup) int {
		return 1 + domain.MaxPageLimit*child
	}
	return c
}

func connectionCost(child int, first *int) int {
	n, err := pageRequest(first, nil).Size()
	if err != nil {
		n = 1
	}
	return 1 + n*child
}
