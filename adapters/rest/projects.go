package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

func (s *Server) createProject(c *gin.Context) {
	obj, err := readObject(c, "name", "key")
	if err != nil {
		abort(c, err)
		return
	}
	in, err := projectBody(obj)
	if err != nil {
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
	patch, err := projectBody(obj)
	if err != nil {
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

// projectBody reads the project fields of a body, checking only their JSON
// types: the domain applies every rule (both required on creation, the key
// fixed afterwards).
func projectBody(obj object) (domain.ProjectFields, error) {
	var f domain.ProjectFields
	var err error
	if f.Name, err = obj.str("name"); err != nil {
		return f, err
	}
	if f.Key, err = obj.str("key"); err != nil {
		return f, err
	}
	return f, nil
}
