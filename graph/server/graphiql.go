package server

import (
	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/web"
)

// GraphiQLAssetPath is where the GraphiQL page's script and style are served.
const GraphiQLAssetPath = "/graphiql"

// The page is never cached, so that a new version's page is loaded with its
// own bundle; the bundle may be, for an hour.
const (
	pageCache  = "no-cache"
	assetCache = "public, max-age=3600"
)

// serveGraphiQL answers GET /graphql from a browser with the GraphiQL page
// (web/graphiql), which loads nothing from another host. Request headers
// (the API key) are never persisted in the browser's storage.
var serveGraphiQL = httpedge.Asset(web.GraphiQLPage, "text/html; charset=utf-8", pageCache)

func mountGraphiQLAssets(e *gin.Engine) {
	e.GET(GraphiQLAssetPath+"/graphiql.js", httpedge.Asset(web.GraphiQLJS, "text/javascript; charset=utf-8", assetCache))
	e.GET(GraphiQLAssetPath+"/graphiql.css", httpedge.Asset(web.GraphiQLCSS, "text/css; charset=utf-8", assetCache))
}
