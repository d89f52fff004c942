package rest

import (
	_ "embed" // the OpenAPI document
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"go.yaml.in/yaml/v3"

	"github.com/worktrack/worktrack/adapters/httpedge"
)

// OpenAPIYAML is the OpenAPI 3.1 description of the REST API, kept in
// openapi.yaml beside the handlers: the one description of the API. Tests
// validate every REST response against it and hold its routes against the
// router's.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// openAPIJSON is the document as JSON, for GET /v1/openapi.json. It is made
// at the first request, not at start: parsing the YAML costs a few MB of
// garbage that a server nobody asks for its description need not grow its
// heap for. The tests parse the same bytes, so it cannot fail in a binary
// whose tests passed; if it did, the request would answer internal_error.
var openAPIJSON = sync.OnceValue(func() []byte {
	var doc any
	if err := yaml.Unmarshal(OpenAPIYAML, &doc); err != nil {
		panic(fmt.Sprintf("rest: openapi.yaml: %v", err))
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("rest: openapi.yaml as JSON: %v", err))
	}
	return b
})

// serveOpenAPI answers GET /v1/openapi.json, with no key: the description
// of the API is public, as Stripe's and GitHub's are.
func serveOpenAPI(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	httpedge.RawJSON(c, http.StatusOK, openAPIJSON())
}
