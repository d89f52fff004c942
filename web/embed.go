// Package web holds the browser assets the binary serves, embedded: the
// GraphiQL page of GET /graphql and the Redoc page of GET /docs, with the
// third-party bundles they load. The bundles are built from pinned npm
// packages (lockfiles under tools/) by `make graphiql` and `make
// docs-assets`, committed, and checked in CI: the pages load nothing from
// another host.
//
// They are strings, served from the binary's read-only data as they are
// (httpedge.Asset): a bundle is read into memory only when a browser asks
// for it.
package web

import _ "embed" // the pages and their bundles

// GraphiQL: the page, and its bundle (tools/graphiql, esbuild).
var (
	//go:embed graphiql/index.html
	GraphiQLPage string
	//go:embed graphiql/graphiql.js
	GraphiQLJS string
	//go:embed graphiql/graphiql.css
	GraphiQLCSS string
)

// The API reference: a page that renders GET /v1/openapi.json with Redoc,
// and Redoc's standalone bundle (tools/docs-assets).
var (
	//go:embed redoc/index.html
	ReferencePage string
	//go:embed redoc/redoc.standalone.js
	RedocJS string
)
