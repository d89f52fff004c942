package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

func (s *Server) createWebhook(c *gin.Context) {
	obj, err := readObject(c, "url", "events")
	if err != nil {
		abort(c, err)
		return
	}
	in, err := webhookBody(obj)
	if err != nil {
		abort(c, err)
		return
	}
	w, err := s.app.Webhooks.Create(c.Request.Context(), Actor(c), in)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusCreated, wire.FromWebhookWithSecret(w))
}

func (s *Server) listWebhooks(c *gin.Context) {
	req, err := pageRequest(c)
	if err != nil {
		abort(c, err)
		return
	}
	page, err := s.app.Webhooks.List(c.Request.Context(), Actor(c), req)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromPage(page, wire.FromWebhook))
}

func (s *Server) getWebhook(c *gin.Context) {
	w, err := s.app.Webhooks.Get(c.Request.Context(), Actor(c), c.Param("webhookId"))
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromWebhook(w))
}

func (s *Server) updateWebhook(c *gin.Context) {
	obj, err := readObject(c, "url", "events", "active")
	if err != nil {
		abort(c, err)
		return
	}
	p, err := webhookBody(obj)
	if err != nil {
		abort(c, err)
		return
	}
	w, err := s.app.Webhooks.Update(c.Request.Context(), Actor(c), c.Param("webhookId"), p)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromWebhook(w))
}

func (s *Server) deleteWebhook(c *gin.Context) {
	if err := s.app.Webhooks.Delete(c.Request.Context(), Actor(c), c.Param("webhookId")); err != nil {
		abort(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) rotateWebhookSecret(c *gin.Context) {
	w, err := s.app.Webhooks.RotateSecret(c.Request.Context(), Actor(c), c.Param("webhookId"))
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromWebhookWithSecret(w))
}

func (s *Server) listDeliveries(c *gin.Context) {
	req, err := pageRequest(c)
	if err != nil {
		abort(c, err)
		return
	}
	var status *domain.DeliveryStatus
	if v, ok := c.GetQuery("status"); ok {
		st := domain.DeliveryStatus(v)
		status = &st
	}
	page, err := s.app.Webhooks.Deliveries(c.Request.Context(), Actor(c), c.Param("webhookId"), status, req)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromPage(page, wire.FromDelivery))
}

func (s *Server) redeliver(c *gin.Context) {
	d, err := s.app.Webhooks.Redeliver(c.Request.Context(), Actor(c), c.Param("webhookId"), c.Param("deliveryId"))
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.FromDelivery(d))
}

// webhookBody reads the webhook fields of a body, checking only their JSON
// types: the domain applies every rule, to a creation and a patch alike.
func webhookBody(obj object) (domain.WebhookFields, error) {
	var f domain.WebhookFields
	var err error
	if f.URL, err = obj.str("url"); err != nil {
		return f, err
	}
	if f.Events, err = obj.strings("events"); err != nil {
		return f, err
	}
	if f.Active, err = obj.bool("active"); err != nil {
		return f, err
	}
	return f, nil
}
