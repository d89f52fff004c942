package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/wire"
)

func (s *Server) me(c *gin.Context) {
	u, err := s.app.Users.Me(c.Request.Context(), Actor(c))
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromUser(u))
}

func (s *Server) listUsers(c *gin.Context) {
	req, err := pageRequest(c)
	if err != nil {
		abort(c, err)
		return
	}
	page, err := s.app.Users.List(c.Request.Context(), Actor(c), req)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromPage(page, wire.FromUser))
}
