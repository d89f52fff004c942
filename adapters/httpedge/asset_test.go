package httpedge_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/httpedge"
)

// An asset is answered whole, with its type, its length (so a browser can
// show progress and reuse the connection) and its caching policy, and with
// no key: the public pages need none.
func TestAssetIsServedWholeWithItsHeaders(t *testing.T) {
	edge := newEdge(t)
	body := strings.Repeat("console.log('worktrack');\n", 10_000) // past net/http's buffer
	edge.Engine().GET("/asset.js", httpedge.Asset(body, "text/javascript; charset=utf-8", "public, max-age=3600"))

	req := httptest.NewRequest(http.MethodGet, "/asset.js", nil)
	rec := httptest.NewRecorder()
	edge.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.String() != body {
		t.Fatalf("GET /asset.js: %d, %d bytes, want 200 and the %d bytes", rec.Code, rec.Body.Len(), len(body))
	}
	for name, want := range map[string]string{
		"Content-Type":   "text/javascript; charset=utf-8",
		"Content-Length": strconv.Itoa(len(body)),
		"Cache-Control":  "public, max-age=3600",
	} {
		if got := rec.Header().Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
