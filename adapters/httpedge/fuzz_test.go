package httpedge

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/core/domain"
)

// FuzzReadObject: no body panics the JSON object reader or the typed field
// readers, and every refusal is a domain error a client is answered with
// (invalid_json, request_too_large, validation_failed), never an internal one.
func FuzzReadObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"title":"x","due_at":"2026-01-02T15:04:05Z","active":true,"events":["a"]}`,
		`{"title":null}`, `{"due_at":"0000-01-01T00:00:00Z"}`, `{"a":1}{"b":2}`, `null`, `[]`, "{\"title\":\"\xff\"}",
		`{"title":"\u0000"}`, `{"events":[1,{}]}`, strings.Repeat("[", 20000), `{"x":` + strings.Repeat("[", 10001) + `}`,
	} {
		f.Add([]byte(s))
	}
	gin.SetMode(gin.TestMode)
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(raw))
		c.Request.Body = http.MaxBytesReader(nil, c.Request.Body, MaxBodyBytes)
		obj, err := ReadObject(c, "title", "due_at", "active", "events")
		if err != nil {
			public(t, err)
			return
		}
		if _, err := ParseObject(raw); err != nil {
			t.Fatalf("ReadObject accepted what ParseObject refuses: %v", err)
		}
		for name := range obj {
			if _, err := obj.Str(name); err != nil {
				public(t, err)
			}
			if _, err := obj.Bool(name); err != nil {
				public(t, err)
			}
			if _, err := obj.Strings(name); err != nil {
				public(t, err)
			}
			if _, err := obj.Time(name); err != nil {
				public(t, err)
			}
		}
	})
}

func public(t *testing.T, err error) {
	t.Helper()
	e, ok := domain.AsError(err)
	if !ok || e.Code == domain.CodeInternal || StatusOf(e.Code) >= 500 {
		t.Fatalf("not a client error: %v", err)
	}
}

// FuzzBearer: the token taken from any Authorization header is a part of
// it, without surrounding spaces, and empty unless the scheme is Bearer.
func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer wk_abc", "bearer  wk_abc ", "Basic abc", "Bearer", "Bearer \x00", " Bearer\twk", "BEARER x y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok := Bearer(h)
		if tok == "" {
			return
		}
		if !strings.Contains(h, tok) || strings.TrimSpace(tok) != tok {
			t.Fatalf("bearer(%q) = %q", h, tok)
		}
		if scheme, _, _ := strings.Cut(strings.TrimSpace(h), " "); !strings.EqualFold(scheme, "bearer") {
			t.Fatalf("bearer(%q) = %q without the Bearer scheme", h, tok)
		}
	})
}
