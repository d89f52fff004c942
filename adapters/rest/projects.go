package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

func (s *Server) createProject(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, "name", "key")
	if err != nil {
		return err
	}
	var in app.ProjectInput
	if in.Name, err = obj.RequiredStr("name"); err != nil {
		return err
	}
	if in.Key, err = obj.RequiredStr("key"); err != nil {
		return err
	}
	p, err := s.app.Projects.Create(c.Request.Context(), Actor(c), in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, wire.FromProject(p))
	return nil
}

func (s *Server) listProjects(c *gin.Context) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.app.Projects.List(c.Request.Context(), Actor(c), req)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromPage(page, wire.FromProject))
	return nil
}

func (s *Server) getProject(c *gin.Context) error {
	p, err := s.app.Projects.Get(c.Request.Context(), Actor(c), c.Param("projectId"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromProject(p))
	return nil
}

func (s *Server) updateProject(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, "name", "key")
	if err != nil {
		return err
	}
	if _, ok := obj["key"]; ok {
		return domain.Invalid("key", "key is fixed after creation")
	}
	var patch domain.ProjectPatch
	if patch.Name, err = obj.Str("name"); err != nil {
		return err
	}
	p, err := s.app.Projects.Update(c.Request.Context(), Actor(c), c.Param("projectId"), patch)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromProject(p))
	return nil
}
