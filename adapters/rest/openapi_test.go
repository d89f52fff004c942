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
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
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
	t.Parallel()
	e := apitest.New(t, storetest.SQLite(t))
	var served []string
	for _, r := range e.Engine.Routes() {
		if strings.HasPrefix(r.Path, "/docs") {
			continue // the human reference rendered from the document
		}
		if r.Path == "/graphql" || strings.HasPrefix(r.Path, "/graphiql/") {
			continue // GraphQL's, described by schema.graphql
		}
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
	t.Parallel()
	if _, err := apitest.OpenAPIValidator(); err != nil {
		t.Fatal(err)
	}
	e := apitest.New(t, storetest.SQLite(t))
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

// GET /docs renders the document with the Redoc bundle the binary serves:
// the page names no other host. (The browser test renders it for real.)
func TestReferencePageServesItsOwnAssets(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, storetest.SQLite(t))
	page := e.Get("/docs", "")
	if page.Status != http.StatusOK || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /docs: %d %v", page.Status, page.Header)
	}
	html := string(page.Body)
	if !strings.Contains(html, `src="/docs/redoc.standalone.js"`) || !strings.Contains(html, `Redoc.init("/v1/openapi.json"`) {
		t.Fatalf("GET /docs does not load the served bundle with the served document:\n%s", html)
	}
	if regexp.MustCompile(`(src|href)="(https?:)?//`).MatchString(html) {
		t.Fatalf("GET /docs loads something from another host:\n%s", html)
	}
	js := e.Get("/docs/redoc.standalone.js", "")
	if js.Status != http.StatusOK || len(js.Body) < 100_000 || !strings.Contains(string(js.Body), "Redoc") {
		t.Fatalf("GET /docs/redoc.standalone.js: %d, %d bytes", js.Status, len(js.Body))
	}
}
