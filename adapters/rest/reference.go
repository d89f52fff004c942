package rest

import (
	"embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// reference holds GET /docs: a page that renders the OpenAPI document with
// Redoc, whose pinned standalone bundle (make docs-assets) the binary
// serves, so the reference works with no internet access.
//
//go:embed reference/index.html reference/redoc.standalone.js
var reference embed.FS

func serveReference(page string, contentType string) gin.HandlerFunc {
	body, err := reference.ReadFile("reference/" + page)
	if err != nil {
		panic("rest: " + err.Error())
	}
	return func(c *gin.Context) {
		if contentType == "text/html; charset=utf-8" {
			c.Header("Cache-Control", "no-cache")
		} else {
			c.Header("Cache-Control", "public, max-age=3600")
		}
		c.Data(http.StatusOK, contentType, body)
	}
}
