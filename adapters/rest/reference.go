package rest

import (
	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/web"
)

// GET /docs is a page that renders the OpenAPI document with Redoc, whose
// pinned standalone bundle the binary serves (web/redoc), so the reference
// works with no internet access.
var (
	serveReferencePage = httpedge.Asset(web.ReferencePage, "text/html; charset=utf-8", "no-cache")
	serveRedoc         = httpedge.Asset(web.RedocJS, "text/javascript; charset=utf-8", "public, max-age=3600")
)
