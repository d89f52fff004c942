package rest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

// An expired key's 401 says that it expired and when, still
// invalid_api_key, over REST and GraphQL; an unknown or malformed key's,
// and a revoked one's, say nothing of the kind.
func TestExpiredKeySaysSo(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		expires := e.Clock.Now().Add(time.Hour).UTC().Truncate(time.Second)
		created := e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{"name": "short", "expires_at": expires.Format(time.RFC3339)})
		created.ExpectStatus(t, http.StatusCreated)
		secret := created.Str("secret")
		e.Get("/v1/users/me", secret).ExpectStatus(t, http.StatusOK)
		e.Clock.Advance(2 * time.Hour)

		r := e.Get("/v1/users/me", secret)
		r.ExpectError(t, http.StatusUnauthorized, "invalid_api_key", "")
		// The time as the API shows times (the key's expires_at).
		at := created.Str("expires_at")
		msg := r.ErrorField("message")
		if !strings.Contains(msg, "expired at "+at) {
			t.Fatalf("expired key's message %q does not say it expired at %s", msg, at)
		}
		g := e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Key: secret, Body: map[string]any{"query": `{ me { id } }`}})
		g.ExpectStatus(t, http.StatusUnauthorized)
		if !strings.Contains(string(g.Body), "expired at "+at) || !strings.Contains(string(g.Body), `"invalid_api_key"`) {
			t.Fatalf("GraphQL's answer to an expired key: %s", g.Body)
		}

		revoked := e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{"name": "revoked"})
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/api_keys/" + revoked.Str("id"), Key: e.Member.Key}).ExpectStatus(t, http.StatusNoContent)
		for _, key := range []string{revoked.Str("secret"), "wtk_" + strings.Repeat("z", 40), "not-a-key"} {
			r := e.Get("/v1/users/me", key)
			r.ExpectError(t, http.StatusUnauthorized, "invalid_api_key", "")
			if m := r.ErrorField("message"); m != "Invalid API key provided." {
				t.Fatalf("%s: message %q", key, m)
			}
		}
	})
}
