package rest

import (
	_ "embed" // the API reference page and its Redoc bundle

	"github.com/worktrack/worktrack/adapters/httpedge"
)

// GET /docs is a page that renders the OpenAPI document with Redoc, whose
// pinned standalone bundle (make docs-assets) the binary serves, so the
// reference works with no internet access. Both are strings served from the
// binary as they are (httpedge.Asset): the 940 kB bundle is read into
// memory only when a browser asks for it.
var (
	//go:embed reference/index.html
	referencePage string
	//go:embed reference/redoc.standalone.js
	redocJS string
)

var (
	serveReferencePage = httpedge.Asset(referencePage, "text/html; charset=utf-8", "no-cache")
	serveRedoc         = httpedge.Asset(redocJS, "text/javascript; charset=utf-8", "public, max-age=3600")
)
