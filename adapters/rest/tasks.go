package rest

import (
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
	t, err := s.app.Tasks.Create(c.Request.Context(), Actor(c), c.Param("projectId"), in)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusCreated, wire.FromTask(t))
	return nil
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
