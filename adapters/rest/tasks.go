package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

var taskFields = []string{"title", "status", "assignee_id", "due_at"}

func (s *Server) createTask(c *gin.Context) {
	obj, err := readObject(c, taskFields...)
	if err != nil {
		abort(c, err)
		return
	}
	in, err := taskBody(obj)
	if err != nil {
		abort(c, err)
		return
	}
	t, err := s.app.Tasks.Create(c.Request.Context(), Actor(c), c.Param("projectId"), in)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusCreated, wire.FromTask(t))
}

// taskBody reads the task fields of a body, checking only their JSON types:
// the domain applies every rule, to a creation and a merge patch alike.
func taskBody(obj object) (domain.TaskFields, error) {
	var f domain.TaskFields
	var err error
	if f.Title, err = obj.str("title"); err != nil {
		return f, err
	}
	status, err := obj.str("status")
	if err != nil {
		return f, err
	}
	f.Status = domain.Field[domain.Status]{Present: status.Present, Null: status.Null, Value: domain.Status(status.Value)}
	if f.AssigneeID, err = obj.str("assignee_id"); err != nil {
		return f, err
	}
	if f.DueAt, err = obj.time("due_at"); err != nil {
		return f, err
	}
	return f, nil
}

func (s *Server) listTasks(c *gin.Context) {
	req, err := pageRequest(c)
	if err != nil {
		abort(c, err)
		return
	}
	var f app.TaskListFilter
	if v, ok := c.GetQuery("status"); ok {
		st := domain.Status(v)
		f.Status = &st
	}
	if v, ok := c.GetQuery("assignee_id"); ok {
		f.AssigneeID = &v
	}
	page, err := s.app.Tasks.List(c.Request.Context(), Actor(c), c.Param("projectId"), f, req)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromPage(page, wire.FromTask))
}

func (s *Server) getTask(c *gin.Context) {
	t, err := s.app.Tasks.Get(c.Request.Context(), Actor(c), c.Param("taskId"))
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromTask(t))
}

func (s *Server) updateTask(c *gin.Context) {
	obj, err := readObject(c, taskFields...)
	if err != nil {
		abort(c, err)
		return
	}
	patch, err := taskBody(obj)
	if err != nil {
		abort(c, err)
		return
	}
	t, err := s.app.Tasks.Update(c.Request.Context(), Actor(c), c.Param("taskId"), patch)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromTask(t))
}

func (s *Server) deleteTask(c *gin.Context) {
	if err := s.app.Tasks.Delete(c.Request.Context(), Actor(c), c.Param("taskId")); err != nil {
		abort(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
