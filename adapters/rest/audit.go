package rest

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// auditParams are the query parameters GET /v1/audit_events takes; any
// other is validation_failed naming it.
var auditParams = map[string]bool{
	"limit": true, "cursor": true, "action": true, "actor_id": true, "target_id": true,
	"created_after": true, "created_before": true,
}

func (s *Server) listAuditEvents(c *gin.Context) error {
	for name := range c.Request.URL.Query() {
		if !auditParams[name] {
			return domain.Invalid(name, "Is not a parameter of this list: limit, cursor, action, actor_id, target_id, created_after, created_before.")
		}
	}
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	r := app.AuditListRequest{Page: req}
	if v, ok := c.GetQuery("action"); ok {
		r.Actions = strings.Split(v, ",")
	}
	for name, dst := range map[string]**string{"actor_id": &r.ActorID, "target_id": &r.TargetID} {
		if v, ok := c.GetQuery(name); ok {
			*dst = &v
		}
	}
	for name, dst := range map[string]**time.Time{"created_after": &r.CreatedAfter, "created_before": &r.CreatedBefore} {
		if v, ok := c.GetQuery(name); ok {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return domain.Invalid(name, "Must be an RFC 3339 date-time, e.g. 2026-12-01T09:00:00Z.")
			}
			*dst = &t
		}
	}
	page, err := s.app.Audit.List(c.Request.Context(), Actor(c), r)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromPage(page, wire.FromAuditEvent))
	return nil
}
