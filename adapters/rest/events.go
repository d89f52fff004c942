package rest

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// eventJSON is an event as the log lists it: the exact document its
// deliveries carry, byte for byte.
func eventJSON(e domain.LoggedEvent) json.RawMessage { return json.RawMessage(e.Payload) }

func (s *Server) listEvents(c *gin.Context) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	r := app.EventListRequest{Page: req}
	if v, ok := c.GetQuery("type"); ok {
		r.Types = []string{v}
	}
	for name, dst := range map[string]**string{"project_id": &r.ProjectID, "starting_after": &r.StartingAfter} {
		if v, ok := c.GetQuery(name); ok {
			*dst = &v
		}
	}
	page, err := s.app.Events.List(c.Request.Context(), Actor(c), r)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromPage(page, eventJSON))
	return nil
}

func (s *Server) getEvent(c *gin.Context) error {
	e, err := s.app.Events.Get(c.Request.Context(), Actor(c), c.Param("eventId"))
	if err != nil {
		return err
	}
	httpedge.RawJSON(c, http.StatusOK, e.Payload)
	return nil
}
