package httpedge

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
)

// jsonBuffers are the buffers response bodies are encoded into.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// JSON writes v as the response body with status: application/json, with
// <, > and & as they are (no body is HTML) and a final newline, so that a
// response printed by curl ends its line. A value that cannot be encoded
// (never one of the API's own) is an internal error.
func JSON(c *gin.Context, status int, v any) {
	b := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		b.Reset()
		jsonBuffers.Put(b)
	}()
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		Logger(c).ErrorContext(c.Request.Context(), "encoding a response", "request_id", RequestID(c), "error", err.Error())
		c.AbortWithStatus(http.StatusInternalServerError)
		return
	}
	c.Data(status, "application/json; charset=utf-8", b.Bytes())
}

// RawJSON writes body, one JSON document, as the response, with a final
// newline as JSON writes it.
func RawJSON(c *gin.Context, status int, body []byte) {
	c.Status(status)
	c.Header("Content-Type", "application/json; charset=utf-8")
	_, _ = c.Writer.Write(body)
	if len(body) == 0 || body[len(body)-1] != '\n' {
		_, _ = c.Writer.WriteString("\n")
	}
}
