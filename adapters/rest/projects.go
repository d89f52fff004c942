package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

func (s *Server) createProject(c *gin.Context) {
	obj, err := readObject(c, "name", "key")
	if err != nil {
		abort(c, err)
		return
	}
	var in app.ProjectInput
	if in.Name, err = obj.requiredStr("name"); err != nil {
		abort(c, err)
		return
	}
	if in.Key, err = obj.requiredStr("key"); err != nil {
		abort(c, err)
		return
	}
	p, err := s.app.Projects.Create(c.Request.Context(), Actor(c), in)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusCreated, wire.FromProject(p))
}

func (s *Server) listProjects(c *gin.Context) {
	req, err := pageRequest(c)
	if err != nil {
		abort(c, err)
		return
	}
	page, err := s.app.Projects.List(c.Request.Context(), Actor(c), req)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromPage(page, wire.FromProject))
}

func (s *Server) getProject(c *gin.Context) {
	p, err := s.app.Projects.Get(c.Request.Context(), Actor(c), c.Param("projectId"))
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromProject(p))
}

func (s *Server) updateProject(c *gin.Context) {
	obj, err := readObject(c, "name", "key")
	if err != nil {
		abort(c, err)
		return
	}
	if _, ok := obj["key"]; ok {
		abort(c, domain.Invalid("key", "key is fixed after creation"))
		return
	}
	var patch domain.ProjectPatch
	if patch.Name, err = obj.str("name"); err != nil {
		abort(c, err)
		return
	}
	p, err := s.app.Projects.Update(c.Request.Context(), Actor(c), c.Param("projectId"), patch)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromProject(p))
}
