package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

var taskFields = []string{"title", "status", "assignee_id", "due_at"}

func (s *Server) createTask(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, taskFields...)
	if err != nil {
		return err
	}
	var in domain.TaskInput
	if in.Title, err = obj.RequiredStr("title"); err != nil {
		return err
	}
	patch, err := taskPatch(obj)
	if err != nil {
		return err
	}
	if patch.Status.Null {
		return domain.Invalid("status", "status must not be null")
	}
	in.Status = patch.Status.Value
	if patch.AssigneeID.Present && !patch.AssigneeID.Null {
		in.AssigneeID = &patch.AssigneeID.Value
	}
	if patch.DueAt.Present && !patch.DueAt.Null {
		in.DueAt = &patch.DueAt.Value
	}
	t, err := s.app.Tasks.Create(c.Request.Context(), Actor(c), c.Param("projectId"), in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, wire.FromTask(t))
	return nil
}

// taskPatch reads the task fields of a body as a merge patch.
func taskPatch(obj httpedge.Object) (domain.TaskPatch, error) {
	var p domain.TaskPatch
	var err error
	if p.Title, err = obj.Str("title"); err != nil {
		return p, err
	}
	status, err := obj.Str("status")
	if err != nil {
		return p, err
	}
	p.Status = domain.Field[domain.Status]{Present: status.Present, Null: status.Null}
	if status.Present && !status.Null {
		if p.Status.Value, err = domain.ParseStatus("status", status.Value); err != nil {
			return p, err
		}
	}
	if p.AssigneeID, err = obj.Str("assignee_id"); err != nil {
		return p, err
	}
	if p.DueAt, err = obj.Time("due_at"); err != nil {
		return p, err
	}
	return p, nil
}

func (s *Server) listTasks(c *gin.Context) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	var f app.TaskListFilter
	if v, ok := c.GetQuery("status"); ok {
		st, err := domain.ParseStatus("status", v)
		if err != nil {
			return err
		}
		f.Status = &st
	}
	if v, ok := c.GetQuery("assignee_id"); ok {
		f.AssigneeID = &v
	}
	page, err := s.app.Tasks.List(c.Request.Context(), Actor(c), c.Param("projectId"), f, req)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromPage(page, wire.FromTask))
	return nil
}

func (s *Server) getTask(c *gin.Context) error {
	t, err := s.app.Tasks.Get(c.Request.Context(), Actor(c), c.Param("taskId"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromTask(t))
	return nil
}

func (s *Server) updateTask(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, taskFields...)
	if err != nil {
		return err
	}
	patch, err := taskPatch(obj)
	if err != nil {
		return err
	}
	t, err := s.app.Tasks.Update(c.Request.Context(), Actor(c), c.Param("taskId"), patch)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromTask(t))
	return nil
}

func (s *Server) deleteTask(c *gin.Context) error {
	if err := s.app.Tasks.Delete(c.Request.Context(), Actor(c), c.Param("taskId")); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}
