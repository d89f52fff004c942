package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

func (s *Server) createProject(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, "name", "key")
	if err != nil {
		return err
	}
	in, err := projectBody(obj)
	if err != nil {
		return err
	}
	answer := httpedge.Answers(c, http.StatusCreated, wire.FromProject)
	p, err := s.app.Projects.Create(c.Request.Context(), Actor(c), in)
	if err != nil {
		return err
	}
	answer(p)
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
	httpedge.JSON(c, http.StatusOK, wire.FromPage(page, wire.FromProject))
	return nil
}

func (s *Server) getProject(c *gin.Context) error {
	p, err := s.app.Projects.Get(c.Request.Context(), Actor(c), c.Param("projectId"))
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromProject(p))
	return nil
}

func (s *Server) updateProject(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, "name", "key")
	if err != nil {
		return err
	}
	patch, err := projectBody(obj)
	if err != nil {
		return err
	}
	p, err := s.app.Projects.Update(c.Request.Context(), Actor(c), c.Param("projectId"), patch)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromProject(p))
	return nil
}

// projectBody reads the project fields of a body, checking only their JSON
// types: the domain applies every rule (both required on creation, the key
// fixed afterwards).
func projectBody(obj httpedge.Object) (domain.ProjectFields, error) {
	var f domain.ProjectFields
	var err error
	if f.Name, err = obj.Str("name"); err != nil {
		return f, err
	}
	if f.Key, err = obj.Str("key"); err != nil {
		return f, err
	}
	return f, nil
}
