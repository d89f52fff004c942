package graph

import (
	_ "embed" // the GraphiQL page and bundle

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
)

// The GraphiQL page and its bundle, built from pinned npm packages by `make
// graphiql` (tools/graphiql) and committed: the page loads nothing from
// another host. Request headers (the API key) are never persisted in the
// browser's storage. They are strings, served from the binary as they are
// (httpedge.Asset).
var (
	//go:embed graphiql/index.html
	graphiqlPage string
	//go:embed graphiql/graphiql.js
	graphiqlJS string
	//go:embed graphiql/graphiql.css
	graphiqlCSS string
)

// GraphiQLAssetPath is where the page's script and style are served.
const GraphiQLAssetPath = "/graphiql"

// The page is never cached, so that a new version's page is loaded with its
// own bundle; the bundle may be, for an hour.
const (
	pageCache  = "no-cache"
	assetCache = "public, max-age=3600"
)

func graphiqlHandlers() (page, js, css gin.HandlerFunc) {
	return httpedge.Asset(graphiqlPage, "text/html; charset=utf-8", pageCache),
		httpedge.Asset(graphiqlJS, "text/javascript; charset=utf-8", assetCache),
		httpedge.Asset(graphiqlCSS, "text/css; charset=utf-8", assetCache)
}
