package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

func (s *Server) createWebhook(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, "url", "events", "headers")
	if err != nil {
		return err
	}
	in, err := webhookBody(obj)
	if err != nil {
		return err
	}
	answer := httpedge.Answers(c, http.StatusCreated, wire.FromWebhookWithSecret)
	w, err := s.app.Webhooks.Create(c.Request.Context(), Actor(c), in)
	if err != nil {
		return err
	}
	answer(w)
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
	httpedge.JSON(c, http.StatusOK, wire.FromPage(page, wire.FromWebhook))
	return nil
}

func (s *Server) getWebhook(c *gin.Context) error {
	w, err := s.app.Webhooks.Get(c.Request.Context(), Actor(c), c.Param("webhookId"))
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromWebhook(w))
	return nil
}

func (s *Server) updateWebhook(c *gin.Context) error {
	obj, err := httpedge.ReadObject(c, "url", "events", "active", "headers")
	if err != nil {
		return err
	}
	p, err := webhookBody(obj)
	if err != nil {
		return err
	}
	w, err := s.app.Webhooks.Update(c.Request.Context(), Actor(c), c.Param("webhookId"), p)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromWebhook(w))
	return nil
}

func (s *Server) deleteWebhook(c *gin.Context) error {
	if err := s.app.Webhooks.Delete(c.Request.Context(), Actor(c), c.Param("webhookId")); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

// rotateWebhookSecret takes an optional body: {"previous_secret_expires_in":
// SECONDS}; the domain holds its rule.
func (s *Server) rotateWebhookSecret(c *gin.Context) error {
	obj, err := httpedge.ReadOptionalObject(c, "previous_secret_expires_in")
	if err != nil {
		return err
	}
	grace, err := obj.Int("previous_secret_expires_in")
	if err != nil {
		return err
	}
	answer := httpedge.Answers(c, http.StatusOK, wire.FromWebhookWithSecret)
	w, err := s.app.Webhooks.RotateSecret(c.Request.Context(), Actor(c), c.Param("webhookId"), grace)
	if err != nil {
		return err
	}
	answer(w)
	return nil
}

// pingWebhook answers 202: the ping is queued, and its delivery shows how
// it went.
func (s *Server) pingWebhook(c *gin.Context) error {
	if _, err := httpedge.ReadOptionalObject(c); err != nil {
		return err
	}
	answer := httpedge.Answers(c, http.StatusAccepted, wire.FromDelivery)
	d, err := s.app.Webhooks.Ping(c.Request.Context(), Actor(c), c.Param("webhookId"))
	if err != nil {
		return err
	}
	answer(d)
	return nil
}

func (s *Server) listDeliveries(c *gin.Context) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	var status *domain.DeliveryStatus
	if v, ok := c.GetQuery("status"); ok {
		st := domain.DeliveryStatus(v)
		status = &st
	}
	page, err := s.app.Webhooks.Deliveries(c.Request.Context(), Actor(c), c.Param("webhookId"), status, req)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromPage(page, wire.FromDelivery))
	return nil
}

func (s *Server) redeliver(c *gin.Context) error {
	answer := httpedge.Answers(c, http.StatusOK, wire.FromDelivery)
	d, err := s.app.Webhooks.Redeliver(c.Request.Context(), Actor(c), c.Param("webhookId"), c.Param("deliveryId"))
	if err != nil {
		return err
	}
	answer(d)
	return nil
}

// webhookBody reads the webhook fields of a body, checking only their JSON
// types: the domain applies every rule, to a creation and a patch alike.
func webhookBody(obj httpedge.Object) (domain.WebhookFields, error) {
	var f domain.WebhookFields
	var err error
	if f.URL, err = obj.Str("url"); err != nil {
		return f, err
	}
	if f.Events, err = obj.Strings("events"); err != nil {
		return f, err
	}
	if f.Active, err = obj.Bool("active"); err != nil {
		return f, err
	}
	if f.Headers, err = webhookHeaders(obj); err != nil {
		return f, err
	}
	return f, nil
}

// webhookHeaders reads the headers object. Its values are decoded as
// pointers so that a null value is refused (domain.WebhookHeaderValues)
// instead of read as "", which decoding into strings would do.
func webhookHeaders(obj httpedge.Object) (domain.Field[map[string]string], error) {
	raw, err := httpedge.Field[map[string]*string](obj, "headers", "an object of header names to string values")
	if err != nil || !raw.Present || raw.Null {
		return domain.Field[map[string]string]{Present: raw.Present, Null: raw.Null}, err
	}
	h, err := domain.WebhookHeaderValues(raw.Value)
	if err != nil {
		return domain.Field[map[string]string]{}, err
	}
	return domain.Set(h), nil
}
