package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

// keyFields are the body fields of a key: all of them on creation; on a
// patch the name alone may change, and the others are refused by the
// domain with a message saying so rather than as unknown fields.
var keyFields = []string{"name", "scopes", "project_ids", "expires_at", "user_id"}

func (s *Server) createAPIKey(c *gin.Context) error {
	in, err := apiKeyBody(c)
	if err != nil {
		return err
	}
	// Only the secret's hash is kept: a replay of this create (the same
	// Idempotency-Key) shows the key without it.
	httpedge.KeepAnswer(c, http.StatusCreated, wire.FromAPIKey)
	k, secret, err := s.app.APIKeys.Create(c.Request.Context(), Actor(c), in)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusCreated, wire.APIKeyWithSecret{APIKey: wire.FromAPIKey(k), Secret: secret})
	return nil
}

func (s *Server) listAPIKeys(c *gin.Context) error {
	req, err := pageRequest(c)
	if err != nil {
		return err
	}
	var user *string
	if v, ok := c.GetQuery("user_id"); ok {
		user = &v
	}
	page, err := s.app.APIKeys.List(c.Request.Context(), Actor(c), user, req)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromPage(page, wire.FromAPIKey))
	return nil
}

func (s *Server) getAPIKey(c *gin.Context) error {
	k, err := s.app.APIKeys.Get(c.Request.Context(), Actor(c), c.Param("keyId"))
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromAPIKey(k))
	return nil
}

func (s *Server) updateAPIKey(c *gin.Context) error {
	patch, err := apiKeyBody(c)
	if err != nil {
		return err
	}
	k, err := s.app.APIKeys.Update(c.Request.Context(), Actor(c), c.Param("keyId"), patch)
	if err != nil {
		return err
	}
	httpedge.JSON(c, http.StatusOK, wire.FromAPIKey(k))
	return nil
}

// revokeAPIKey answers 204: the key stays listed, with revoked_at.
func (s *Server) revokeAPIKey(c *gin.Context) error {
	if _, err := s.app.APIKeys.Revoke(c.Request.Context(), Actor(c), c.Param("keyId")); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func apiKeyBody(c *gin.Context) (domain.APIKeyFields, error) {
	var f domain.APIKeyFields
	obj, err := httpedge.ReadObject(c, keyFields...)
	if err != nil {
		return f, err
	}
	if f.Name, err = obj.Str("name"); err != nil {
		return f, err
	}
	if f.Scopes, err = obj.Strings("scopes"); err != nil {
		return f, err
	}
	if f.ProjectIDs, err = obj.Strings("project_ids"); err != nil {
		return f, err
	}
	if f.ExpiresAt, err = obj.Time("expires_at"); err != nil {
		return f, err
	}
	f.UserID, err = obj.Str("user_id")
	return f, err
}
