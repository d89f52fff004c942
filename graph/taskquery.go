package graph

import (
	"errors"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

// filterParams are the GraphQL argument paths of the task query's
// parameters: the core names them as REST does, and a createTask's status
// is "status" too, so these renames apply only to the errors of the fields
// that take a TaskFilter.
var filterParams = map[string]string{
	domain.ParamProjectID:    "filter.projectIds",
	domain.ParamStatus:       "filter.statuses",
	domain.ParamAssigneeID:   "filter.assigneeIds",
	domain.ParamDueAfter:     "filter.dueAfter",
	domain.ParamDueBefore:    "filter.dueBefore",
	domain.ParamUpdatedAfter: "filter.updatedAfter",
	domain.ParamText:         "filter.query",
	domain.ParamSort:         "orderBy",
	domain.ParamGroupBy:      "groupBy",
}

// withFilterParams renames the param of a task query's error to its
// argument path; renames, when given, override filterParams (Project.tasks'
// shorthand arguments).
func withFilterParams(err error, renames map[string]string) error {
	var e *domain.Error
	if !errors.As(err, &e) || e.Param == "" {
		return err
	}
	p, ok := renames[e.Param]
	if !ok {
		if p, ok = filterParams[e.Param]; !ok {
			return err
		}
	}
	return &domain.Error{Code: e.Code, Message: e.Message, Param: p}
}

// taskQuery is the domain query of a TaskFilter and TaskOrder. An absent
// or null input keeps everything, and unassigned or assignedToMe false adds
// nothing.
func taskQuery(f *model.TaskFilter, o *model.TaskOrder) domain.TaskQuery {
	var q domain.TaskQuery
	if o != nil {
		q.Order = domain.TaskOrder{Field: o.Field, Desc: o.Direction == model.OrderDirectionDesc}
	}
	if f == nil {
		return q
	}
	q.ProjectIDs, q.Statuses, q.AssigneeIDs = f.ProjectIds.Value(), f.Statuses.Value(), f.AssigneeIds.Value()
	q.Unassigned = isTrue(f.Unassigned.Value())
	q.AssignedToMe = isTrue(f.AssignedToMe.Value())
	q.DueAfter, q.DueBefore, q.UpdatedAfter = f.DueAfter.Value(), f.DueBefore.Value(), f.UpdatedAfter.Value()
	q.Text = f.Query.Value()
	return q
}

func isTrue(b *bool) bool { return b != nil && *b }

// projectTaskQuery is Project.tasks' query: its filter and order, with the
// status and assigneeId shorthands, each one value of the filter's list and
// refused beside it.
func projectTaskQuery(status *domain.Status, assigneeID *string, f *model.TaskFilter, o *model.TaskOrder) (domain.TaskQuery, error) {
	q := taskQuery(f, o)
	if status != nil {
		if q.Statuses != nil {
			return q, domain.Invalid("status", "Give status or filter.statuses, not both.")
		}
		q.Statuses = []domain.Status{*status}
	}
	if assigneeID != nil {
		if q.FiltersAssignee() {
			return q, domain.Invalid("assigneeId", "Give assigneeId or the filter's assignee fields, not both.")
		}
		q.AssigneeIDs = []string{*assigneeID}
	}
	return q, nil
}
