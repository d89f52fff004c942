package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

func (s *Server) createWebhook(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, "url", "events")
	if err != nil {
		return err
	}
	var in app.WebhookInput
	if in.URL, err = obj.RequiredStr("url"); err != nil {
		return err
	}
	events, err := obj.Strings("events")
	if err != nil {
		return err
	}
	if !events.Present || events.Null {
		return domain.Invalid("events", "events is required")
	}
	in.Events = events.Value
	w, err := s.app.Webhooks.Create(c.Request.Context(), Actor(c), in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, wire.FromWebhookWithSecret(w))
	return nil
}

func (s *Server) listWebhooks(c *gin.Context) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	page, err := s.app.Webhooks.List(c.Request.Context(), Actor(c), req)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromPage(page, wire.FromWebhook))
	return nil
}

func (s *Server) getWebhook(c *gin.Context) error {
	w, err := s.app.Webhooks.Get(c.Request.Context(), Actor(c), c.Param("webhookId"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromWebhook(w))
	return nil
}

func (s *Server) updateWebhook(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, "url", "events", "active")
	if err != nil {
		return err
	}
	var p domain.WebhookPatch
	if p.URL, err = obj.Str("url"); err != nil {
		return err
	}
	if p.Events, err = obj.Strings("events"); err != nil {
		return err
	}
	if p.Active, err = obj.Bool("active"); err != nil {
		return err
	}
	w, err := s.app.Webhooks.Update(c.Request.Context(), Actor(c), c.Param("webhookId"), p)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromWebhook(w))
	return nil
}

func (s *Server) deleteWebhook(c *gin.Context) error {
	if err := s.app.Webhooks.Delete(c.Request.Context(), Actor(c), c.Param("webhookId")); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (s *Server) rotateWebhookSecret(c *gin.Context) error {
	w, err := s.app.Webhooks.RotateSecret(c.Request.Context(), Actor(c), c.Param("webhookId"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromWebhookWithSecret(w))
	return nil
}

func (s *Server) listDeliveries(c *gin.Context) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	var status *domain.DeliveryStatus
	if v, ok := c.GetQuery("status"); ok {
		st, err := domain.ParseDeliveryStatus("status", v)
		if err != nil {
			return err
		}
		status = &st
	}
	page, err := s.app.Webhooks.Deliveries(c.Request.Context(), Actor(c), c.Param("webhookId"), status, req)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromPage(page, wire.FromDelivery))
	return nil
}

func (s *Server) redeliver(c *gin.Context) error {
	d, err := s.app.Webhooks.Redeliver(c.Request.Context(), Actor(c), c.Param("webhookId"), c.Param("deliveryId"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wire.FromDelivery(d))
	return nil
}
