package graph

import (
	"embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// graphiqlAssets is the GraphiQL page and its bundle, built from pinned
// npm packages by `make graphiql` (tools/graphiql) and committed: the page
// loads nothing from another host. Request headers (the API key) are never
// persisted in the browser's storage.
//
//go:embed graphiql/index.html graphiql/graphiql.js graphiql/graphiql.css
var graphiqlAssets embed.FS

// GraphiQLAssetPath is where the page's script and style are served.
const GraphiQLAssetPath = "/graphiql"

func graphiqlFile(name, contentType string) func(c *gin.Context) {
	body, err := graphiqlAssets.ReadFile("graphiql/" + name)
	if err != nil {
		panic("graph: " + err.Error())
	}
	cache := "public, max-age=3600"
	if name == "index.html" {
		cache = "no-cache"
	}
	return func(c *gin.Context) {
		c.Header("Cache-Control", cache)
		c.Data(http.StatusOK, contentType, body)
	}
}
