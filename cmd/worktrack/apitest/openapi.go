package apitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/helpers"

	"github.com/worktrack/worktrack/adapters/rest"
)

// The OpenAPI document's validator (pb33f/libopenapi-validator), built once.
var openAPI struct {
	once sync.Once
	v    validator.Validator
	err  error
}

// OpenAPIValidator is the validator of rest.OpenAPIYAML, or the reason the
// document could not be loaded.
func OpenAPIValidator() (validator.Validator, error) {
	openAPI.once.Do(func() {
		doc, err := libopenapi.NewDocument(rest.OpenAPIYAML)
		if err != nil {
			openAPI.err = fmt.Errorf("openapi.yaml: %w", err)
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			openAPI.err = fmt.Errorf("openapi.yaml: %v", errs)
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			var msgs []string
			for _, e := range verrs {
				msgs = append(msgs, e.Error())
			}
			openAPI.err = fmt.Errorf("openapi.yaml is not a valid OpenAPI 3.1 document:\n%s", strings.Join(msgs, "\n"))
			return
		}
		openAPI.v = v
	})
	return openAPI.v, openAPI.err
}

// CheckOpenAPI fails t when a response to a route the document describes
// does not conform to it: an undocumented status, a body that breaks its
// schema, a missing required header. Requests to routes the document does
// not describe (unknown paths and methods) are left alone; the route test
// holds the document and the router to each other.
func CheckOpenAPI(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if unrouted(body) {
		return // the router matched no route: nothing the document describes
	}
	v, err := OpenAPIValidator()
	if err != nil {
		t.Fatal(err)
	}
	res := &http.Response{
		StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}
	// The validator reads neither body of the request; give it a fresh one.
	r := req.Clone(req.Context())
	r.Body = http.NoBody
	ok, errs := v.ValidateHttpResponse(r, res)
	if ok {
		return
	}
	var msgs []string
	for _, e := range errs {
		if e.ValidationType == helpers.PathValidation {
			return // not a documented route
		}
		msg := e.Message
		if e.Reason != "" {
			msg += ": " + e.Reason
		}
		for _, se := range e.SchemaValidationErrors {
			msg += fmt.Sprintf("\n    %s: %s", se.FieldPath, se.Reason)
		}
		msgs = append(msgs, msg)
	}
	t.Errorf("%s %s answered %d, which the OpenAPI document (adapters/rest/openapi.yaml) does not allow:\n  %s\n  body: %s",
		req.Method, req.URL.Path, status, strings.Join(msgs, "\n  "), truncate(body, 600))
}

// unrouted reports the router's own answers to a path or method it has no
// route for (404 route_not_found, 405 method_not_allowed). The validator
// matches paths more loosely than gin (a trailing slash, say), so it
// cannot tell them.
func unrouted(body []byte) bool {
	return bytes.Contains(body, []byte(`"code":"route_not_found"`)) || bytes.Contains(body, []byte(`"code":"method_not_allowed"`))
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
