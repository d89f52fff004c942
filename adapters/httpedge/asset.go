package httpedge

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// Asset serves body, a file embedded in the binary as a string, with its
// content type and Cache-Control. The bytes are written straight from the
// binary's read-only data: nothing is copied onto the heap at start, and
// the pages of a file nobody asks for (the GraphiQL and Redoc bundles, 2.6
// MB together) are never read into memory, so they add nothing to the
// process's resident set until a browser loads them.
func Asset(body, contentType, cacheControl string) gin.HandlerFunc {
	length := strconv.Itoa(len(body))
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("Content-Type", contentType)
		h.Set("Content-Length", length)
		h.Set("Cache-Control", cacheControl)
		c.Status(http.StatusOK)
		_, _ = c.Writer.WriteString(body)
	}
}
