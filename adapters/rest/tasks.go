package rest

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

var taskFields = []string{"title", "status", "assignee_id", "due_at"}

func (s *Server) createTask(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, taskFields...)
	if err != nil {
		return err
	}
	in, err := taskBody(obj)
	if err != nil {
		return err
	}
	answer := httpedge.Answers(c, http.StatusCreated, wire.FromTask)
	t, err := s.app.Tasks.Create(c.Request.Context(), Actor(c), c.Param("projectId"), in)
	if err != nil {
		return err
	}
	answer(t)
	return nil
}

// createTasks is the bulk creation: {"tasks": [TaskCreate, …]}. A bad
// item's error names it by its index in tasks (tasks[3].title), whether
// the item's JSON or a rule of the domain is at fault.
func (s *Server) createTasks(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, "tasks")
	if err != nil {
		return err
	}
	ins, err := taskBodies(obj)
	if err == nil {
		answer := httpedge.Answers(c, http.StatusCreated, func(ts []domain.Task) wire.Created[wire.Task] { return wire.FromCreated(ts, wire.FromTask) })
		var ts []domain.Task
		if ts, err = s.app.Tasks.CreateMany(c.Request.Context(), Actor(c), c.Param("projectId"), ins); err == nil {
			answer(ts)
			return nil
		}
	}
	if e, ok := domain.AsError(err); ok && e.Param != "" {
		named := *e
		named.Param = domain.NameItems(e.Param, "tasks")
		return &named
	}
	return err
}

// taskBodies reads the items of a bulk creation, each as taskBody reads
// one creation's body; the errors name the core's items (domain.AtItem).
func taskBodies(obj httpedge.Object) ([]domain.TaskFields, error) {
	var items []json.RawMessage
	if raw, ok := obj["tasks"]; !ok || json.Unmarshal(raw, &items) != nil || items == nil {
		return nil, domain.Invalid(domain.ParamItems, "Must be an array of 1 to %d task objects.", domain.MaxBatchItems)
	}
	if err := domain.CheckBatchSize(len(items)); err != nil {
		return nil, err
	}
	ins := make([]domain.TaskFields, len(items))
	for i, raw := range items {
		item, err := httpedge.ParseAllowed(raw, taskFields)
		if err != nil {
			if e, ok := domain.AsError(err); ok && e.Code != domain.CodeValidationFailed {
				// Not an object: the item as a whole is at fault.
				return nil, domain.AtItem(i, domain.Invalid("", "Must be a task object."))
			}
			return nil, domain.AtItem(i, err)
		}
		if ins[i], err = taskBody(item); err != nil {
			return nil, domain.AtItem(i, err)
		}
	}
	return ins, nil
}

// taskBody reads the task fields of a body, checking only their JSON types:
// the domain applies every rule, to a creation and a merge patch alike.
func taskBody(obj httpedge.Object) (domain.TaskFields, error) {
	var f domain.TaskFields
	var err error
	if f.Title, err = obj.Str("title"); err != nil {
		return f, err
	}
	status, err := obj.Str("status")
	if err != nil {
		return f, err
	}
	f.Status = domain.Field[domain.Status]{Present: status.Present, Null: status.Null, Value: domain.Status(status.Value)}
	if f.AssigneeID, err = obj.Str("assignee_id"); err != nil {
		return f, err
	}
	if f.DueAt, err = obj.Time("due_at"); err != nil {
		return f, err
	}
	return f, nil
}

func (s *Server) getTask(c *gin.Context) error {
	t, err := s.app.Tasks.Get(c.Request.Context(), Actor(c), c.Param("taskId"))
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromTask(t))
	return nil
}

func (s *Server) updateTask(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, taskFields...)
	if err != nil {
		return err
	}
	patch, err := taskBody(obj)
	if err != nil {
		return err
	}
	t, err := s.app.Tasks.Update(c.Request.Context(), Actor(c), c.Param("taskId"), patch)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromTask(t))
	return nil
}

func (s *Server) deleteTask(c *gin.Context) error {
	if err := s.app.Tasks.Delete(c.Request.Context(), Actor(c), c.Param("taskId")); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}
