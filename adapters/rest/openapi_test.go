package rest_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/worktrack/worktrack/adapters/rest"
	"github.com/worktrack/worktrack/adapters/rest/resttest"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// documentedRoutes are the "METHOD /path" pairs of the OpenAPI document,
// with gin's ":param" syntax.
func documentedRoutes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(rest.OpenAPIYAML, &doc); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	var out []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "patch", "delete", "head", "options":
				out = append(out, strings.ToUpper(method)+" "+param.ReplaceAllString(path, ":$1"))
			}
		}
	}
	slices.Sort(out)
	return out
}

// The document and the router describe the same routes: a route added to
// the router without its description, or described but not served, fails.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	e := resttest.New(t, storetest.SQLite(t))
	var served []string
	for _, r := range e.Engine.Routes() {
		served = append(served, r.Method+" "+r.Path)
	}
	slices.Sort(served)
	documented := documentedRoutes(t)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("the router serves %s, which the OpenAPI document (adapters/rest/openapi.yaml) does not describe", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("the OpenAPI document describes %s, which the router does not serve", r)
		}
	}
	if len(served) < 20 {
		t.Fatalf("only %d routes served: %v", len(served), served)
	}
}

// GET /v1/openapi.json serves the document as JSON, with no key; the
// validator the tests use accepts it as OpenAPI 3.1.
func TestOpenAPIDocumentIsServed(t *testing.T) {
	if _, err := resttest.OpenAPIValidator(); err != nil {
		t.Fatal(err)
	}
	e := resttest.New(t, storetest.SQLite(t))
	res := e.Get("/v1/openapi.json", "")
	if res.Status != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /v1/openapi.json: %d %v", res.Status, res.Header)
	}
	var served, kept map[string]any
	if err := json.Unmarshal(res.Body, &served); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(rest.OpenAPIYAML, &kept); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(served)
	b, _ := json.Marshal(kept)
	if string(a) != string(b) || served["openapi"] != "3.1.0" {
		t.Fatalf("the served document differs from openapi.yaml, or is not 3.1.0 (%v)", served["openapi"])
	}
}
