package rest

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// The query parameters of the task lists and counts (docs/finding-tasks.md).
var (
	taskFilterParams = []string{
		domain.ParamStatus, domain.ParamAssigneeID, domain.ParamDueAfter, domain.ParamDueBefore,
		domain.ParamUpdatedAfter, domain.ParamText,
	}
	projectTaskListParams = append([]string{"limit", "cursor", domain.ParamSort}, taskFilterParams...)
	taskListParams        = append([]string{domain.ParamProjectID}, projectTaskListParams...)
	taskCountParams       = append([]string{domain.ParamGroupBy, domain.ParamProjectID}, taskFilterParams...)
)

// GET /v1/projects/{id}/tasks
func (s *Server) listTasks(c *gin.Context) error {
	return s.listTasksOf(c, c.Param("projectId"), projectTaskListParams)
}

// GET /v1/tasks
func (s *Server) listAllTasks(c *gin.Context) error {
	return s.listTasksOf(c, "", taskListParams)
}

func (s *Server) listTasksOf(c *gin.Context, projectID string, allowed []string) error {
	if err := onlyParams(c, allowed); err != nil {
		return err
	}
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	q, err := taskQuery(c)
	if err != nil {
		return err
	}
	page, err := s.app.Tasks.List(c.Request.Context(), Actor(c), app.TaskListRequest{ProjectID: projectID, Query: q, Page: req})
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromPage(page, wire.FromTask))
	return nil
}

// GET /v1/tasks/counts
func (s *Server) countTasks(c *gin.Context) error {
	if err := onlyParams(c, taskCountParams); err != nil {
		return err
	}
	by, ok := c.GetQuery(domain.ParamGroupBy)
	if !ok {
		return domain.Invalid(domain.ParamGroupBy, "Is required: status, assignee_id or project_id.")
	}
	q, err := taskQuery(c)
	if err != nil {
		return err
	}
	counts, err := s.app.Tasks.Count(c.Request.Context(), Actor(c), q, domain.TaskCountGroup(by))
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromTaskCounts(counts))
	return nil
}

// onlyParams refuses a query parameter the route does not take, and one
// given twice (a list's values are comma-separated), naming it.
func onlyParams(c *gin.Context, allowed []string) error {
	query := c.Request.URL.Query()
	names := make([]string, 0, len(query))
	for name := range query {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(allowed, name) {
			return domain.Invalid(name, "Is not a parameter of this call; it takes %s.", strings.Join(allowed, ", "))
		}
		if len(query[name]) > 1 {
			return domain.Invalid(name, "Is given more than once; separate a list's values with commas.")
		}
	}
	return nil
}

// taskQuery reads the filters and order of a task list from the query
// string. It only splits lists and parses date-times; every rule is the
// domain's.
func taskQuery(c *gin.Context) (domain.TaskQuery, error) {
	var q domain.TaskQuery
	if v, ok := c.GetQuery(domain.ParamProjectID); ok {
		q.ProjectIDs = strings.Split(v, ",")
	}
	if v, ok := c.GetQuery(domain.ParamStatus); ok {
		for _, s := range strings.Split(v, ",") {
			q.Statuses = append(q.Statuses, domain.Status(s))
		}
	}
	if v, ok := c.GetQuery(domain.ParamAssigneeID); ok {
		q.AssigneeIDs = []string{}
		for _, id := range strings.Split(v, ",") {
			switch id {
			case "me":
				q.AssignedToMe = true
			case "none":
				q.Unassigned = true
			default:
				q.AssigneeIDs = append(q.AssigneeIDs, id)
			}
		}
		if len(q.AssigneeIDs) == 0 {
			q.AssigneeIDs = nil
		}
	}
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{domain.ParamDueAfter, &q.DueAfter}, {domain.ParamDueBefore, &q.DueBefore}, {domain.ParamUpdatedAfter, &q.UpdatedAfter}} {
		if v, ok := c.GetQuery(p.name); ok {
			t, err := queryTime(p.name, v)
			if err != nil {
				return q, err
			}
			*p.dst = &t
		}
	}
	if v, ok := c.GetQuery(domain.ParamText); ok {
		q.Text = &v
	}
	if v, ok := c.GetQuery(domain.ParamSort); ok {
		o, err := domain.ParseTaskOrder(v)
		if err != nil {
			return q, err
		}
		q.Order = o
	}
	return q, nil
}

// queryTime parses an RFC 3339 date-time of the query string. A "+" of an
// offset that was not percent-encoded arrives as a space; it is read as the
// "+" it was.
func queryTime(name, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.ReplaceAll(v, " ", "+"))
	if err != nil {
		return time.Time{}, domain.Invalid(name, "Must be an RFC 3339 date-time, e.g. 2026-01-02T15:04:05Z (encode a + offset as %%2B).")
	}
	return t, nil
}
