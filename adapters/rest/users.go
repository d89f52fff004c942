package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
)

func (s *Server) me(c *gin.Context) error {
	u, err := s.app.Users.Me(c.Request.Context(), Actor(c))
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromUser(u))
	return nil
}

func (s *Server) listUsers(c *gin.Context) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.app.Users.List(c.Request.Context(), Actor(c), req)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromPage(page, wire.FromUser))
	return nil
}
