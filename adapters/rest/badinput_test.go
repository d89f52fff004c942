package rest_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

// illFormedIDs are path segments (escaped) that cannot be ids of the kind:
// NUL bytes and invalid UTF-8 (which PostgreSQL refuses outright), other
// characters, nothing after the prefix, too long.
func illFormedIDs(prefix string) []string {
	return []string{
		prefix + "_%00", prefix + "_abc%00def", "%00", prefix + "_%FF%FE", prefix + "_%C3%28",
		prefix + "_a-b", prefix + "_a%20b", prefix + "_", prefix + "_" + strings.Repeat("a", 65),
		prefix + "_%E2%80%8B", strings.ToUpper(prefix) + "_abc",
	}
}

// TestIllFormedPathIDsAreNotFound: an id that cannot be one, in any path of
// the API, is answered like an absent id (404 resource_not_found), never by
// the database's error.
func TestIllFormedPathIDsAreNotFound(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		routes := []struct {
			method, path, prefix string
			body                 any
		}{
			{http.MethodGet, "/v1/projects/%s", "prj", nil},
			{http.MethodPatch, "/v1/projects/%s", "prj", map[string]any{"name": "N"}},
			{http.MethodGet, "/v1/projects/%s/tasks", "prj", nil},
			{http.MethodPost, "/v1/projects/%s/tasks", "prj", map[string]any{"title": "T"}},
			{http.MethodGet, "/v1/tasks/%s", "tsk", nil},
			{http.MethodPatch, "/v1/tasks/%s", "tsk", map[string]any{"title": "T"}},
			{http.MethodDelete, "/v1/tasks/%s", "tsk", nil},
			{http.MethodGet, "/v1/webhooks/%s", "whk", nil},
			{http.MethodPatch, "/v1/webhooks/%s", "whk", map[string]any{"active": false}},
			{http.MethodDelete, "/v1/webhooks/%s", "whk", nil},
			{http.MethodPost, "/v1/webhooks/%s/rotate_secret", "whk", nil},
			{http.MethodGet, "/v1/webhooks/%s/deliveries", "whk", nil},
			{http.MethodPost, "/v1/webhooks/%s/deliveries/whd_absent0000000000000000/redeliver", "whk", nil},
			{http.MethodPost, "/v1/webhooks/whk_absent0000000000000000/deliveries/%s/redeliver", "whd", nil},
		}
		for _, r := range routes {
			for _, id := range illFormedIDs(r.prefix) {
				path := fmt.Sprintf(r.path, id)
				res := e.Do(apitest.Request{Method: r.method, Path: path, Key: e.Admin.Key, Body: r.body})
				if res.Status != http.StatusNotFound || res.ErrorField("code") != "resource_not_found" {
					t.Fatalf("%s %s: want 404 resource_not_found, got %d: %s", r.method, path, res.Status, res.Body)
				}
			}
		}
	})
}

// TestIllFormedReferencesAreValidationFailed: ids that cannot be ids in a
// body field, a query filter or a forged cursor are validation_failed
// naming the field, like references to nobody.
func TestIllFormedReferencesAreValidationFailed(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "REF")
		task := newTask(t, e, prj, map[string]any{"title": "T"}).Str("id")
		for _, id := range []string{"usr_\x00", "usr_a\x00b", "\x00", "usr_a-b", "usr_é", "usr_" + strings.Repeat("a", 65)} {
			e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Member.Key, map[string]any{"title": "T", "assignee_id": id}).
				ExpectError(t, 400, "validation_failed", "assignee_id")
			e.Send(http.MethodPatch, "/v1/tasks/"+task, e.Member.Key, map[string]any{"assignee_id": id}).
				ExpectError(t, 400, "validation_failed", "assignee_id")
			e.Get("/v1/projects/"+prj+"/tasks?assignee_id="+url.QueryEscape(id), e.Guest.Key).
				ExpectError(t, 400, "validation_failed", "assignee_id")
		}
		e.Get("/v1/projects/"+prj+"/tasks?assignee_id=usr_%FF", e.Guest.Key).ExpectError(t, 400, "validation_failed", "assignee_id")
		// A well-formed id of nobody matches nothing.
		if res := e.Get("/v1/projects/"+prj+"/tasks?assignee_id=usr_nobody0000000000000000", e.Guest.Key); res.Status != 200 ||
			len(res.JSON["data"].([]any)) != 0 {
			t.Fatalf("filter by nobody: %d %s", res.Status, res.Body)
		}

		// The cursor checksum is not secret: forged cursors naming a position
		// no store can compare with are refused like tampered ones.
		scope := "projects:" + e.Workspace.ID
		now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		forged := []domain.Position{
			{At: now, ID: "prj_\x00"},
			{At: now, ID: "prj_\xff"},
			{At: now, ID: ""},
			{At: time.UnixMicro(-1 << 62), ID: prj},
			{At: time.UnixMicro(1 << 62), ID: prj},
			{At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), ID: prj},
		}
		for _, p := range forged {
			e.Get("/v1/projects?cursor="+domain.EncodeCursor(scope, p), e.Guest.Key).ExpectError(t, 400, "validation_failed", "cursor")
		}
		for _, c := range []string{"%00", "%FF", "AAAA%00", strings.Repeat("A", 5000)} {
			e.Get("/v1/projects?cursor="+c, e.Guest.Key).ExpectError(t, 400, "validation_failed", "cursor")
			e.Get("/v1/projects/"+prj+"/tasks?cursor="+c, e.Guest.Key).ExpectError(t, 400, "validation_failed", "cursor")
		}
	})
}

// TestTextFieldsRefuseNULAndInvalidUTF8: names and titles hold no control
// characters, and a body that is not UTF-8 is not JSON: both 400.
func TestTextFieldsRefuseNULAndInvalidUTF8(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "TXT")
		task := newTask(t, e, prj, map[string]any{"title": "T"}).Str("id")
		for _, s := range []string{"a\x00b", "\x00", "a\u0007b"} {
			e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Member.Key, map[string]any{"title": s}).
				ExpectError(t, 400, "validation_failed", "title")
			e.Send(http.MethodPatch, "/v1/tasks/"+task, e.Member.Key, map[string]any{"title": s}).
				ExpectError(t, 400, "validation_failed", "title")
			e.Send(http.MethodPatch, "/v1/projects/"+prj, e.Member.Key, map[string]any{"name": s}).
				ExpectError(t, 400, "validation_failed", "name")
		}
		for _, body := range []string{"{\"title\":\"a\xffb\"}", "{\"title\":\"\xc3\x28\"}", "{\"ti\xfftle\":\"x\"}"} {
			e.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/projects/" + prj + "/tasks", Key: e.Member.Key, Body: body}).
				ExpectError(t, 400, "invalid_json", "")
			e.Do(apitest.Request{Method: http.MethodPatch, Path: "/v1/tasks/" + task, Key: e.Member.Key, Body: body}).
				ExpectError(t, 400, "invalid_json", "")
		}
	})
}

// outOfRangeTimes are RFC 3339 instants outside years 0001-9999 once in UTC.
var outOfRangeTimes = []string{
	"0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "0000-12-31T23:59:59.999999Z",
	"9999-12-31T23:00:00-01:00", "9999-12-31T23:59:59-00:01",
}

// TestDueAtOutsideStorableYears: due_at outside years 0001-9999 in UTC is
// validation_failed on create and update, and the extremes that are inside
// round-trip through create, read, list, update and delete.
func TestDueAtOutsideStorableYears(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "DUE")
		task := newTask(t, e, prj, map[string]any{"title": "T"}).Str("id")
		for _, v := range outOfRangeTimes {
			e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Member.Key, map[string]any{"title": "T", "due_at": v}).
				ExpectError(t, 400, "validation_failed", "due_at")
			e.Send(http.MethodPatch, "/v1/tasks/"+task, e.Member.Key, map[string]any{"due_at": v}).
				ExpectError(t, 400, "validation_failed", "due_at")
		}
		edges := map[string]string{
			"0001-01-01T00:00:00Z":              "0001-01-01T00:00:00.000000Z",
			"0001-01-01T01:00:00+01:00":         "0001-01-01T00:00:00.000000Z",
			"9999-12-31T23:59:59.9999999Z":      "9999-12-31T23:59:59.999999Z",
			"9999-12-31T22:59:59.999999-01:00":  "9999-12-31T23:59:59.999999Z",
			"9999-12-31T23:59:59.999999+14:00":  "9999-12-31T09:59:59.999999Z",
			"0001-01-01T00:00:00.000001-00:00":  "0001-01-01T00:00:00.000001Z",
			"0001-01-01T23:59:59.999999+23:59":  "0001-01-01T00:00:59.999999Z",
			"9999-12-31T00:00:00.000000-23:59":  "9999-12-31T23:59:00.000000Z",
			"2026-06-01T12:00:00.123456789Z":    "2026-06-01T12:00:00.123456Z",
			"9999-12-31T23:59:59.999999999Z":    "9999-12-31T23:59:59.999999Z",
			"0001-01-01T00:00:00.0000009+00:00": "0001-01-01T00:00:00.000000Z",
		}
		for in, want := range edges {
			res := newTask(t, e, prj, map[string]any{"title": "edge", "due_at": in})
			id := res.Str("id")
			if res.Str("due_at") != want {
				t.Fatalf("due_at %s: want %s, got %s", in, want, res.Body)
			}
			if got := e.Get("/v1/tasks/"+id, e.Guest.Key); got.Status != 200 || got.Str("due_at") != want {
				t.Fatalf("read back %s: %d %s", in, got.Status, got.Body)
			}
			if got := e.Send(http.MethodPatch, "/v1/tasks/"+id, e.Member.Key, map[string]any{"due_at": in, "title": "edge2"}); got.Status != 200 || got.Str("due_at") != want {
				t.Fatalf("patch %s: %d %s", in, got.Status, got.Body)
			}
		}
		if res := e.Get("/v1/projects/"+prj+"/tasks?limit=100", e.Guest.Key); res.Status != 200 || len(res.JSON["data"].([]any)) != len(edges)+1 {
			t.Fatalf("list: %d %s", res.Status, res.Body)
		}
		for _, v := range outOfRangeTimes {
			e.Send(http.MethodPatch, "/v1/tasks/"+task, e.Member.Key, map[string]any{"due_at": v}).ExpectError(t, 400, "validation_failed", "due_at")
		}
		e.Send(http.MethodDelete, "/v1/tasks/"+task, e.Member.Key, nil).ExpectStatus(t, http.StatusNoContent)
	})
}

// TestMalformedChunkedBodyIs400: a body that cannot be read as HTTP (bad
// chunk sizes, an oversized extension) is the client's fault, invalid_json,
// never a 500; one cut short by the client leaving is a 499. Sent over a real connection, since only the server's reader
// sees the framing.
func TestMalformedChunkedBodyIs400(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, storetest.SQLite(t))
	prj := newProject(t, e, "CHK")
	srv := httptest.NewServer(e.Engine)
	defer srv.Close()
	// A body cut short by the client closing its side of the connection is
	// a client gone (499 client_closed_request, never a 5xx): net/http
	// cancels the request's context when the connection reads EOF.
	bodies := map[string]string{
		"zz\r\n{}\r\n0\r\n\r\n":                   "invalid_json", // chunk size not hex
		"5\r\n{\"title\":\"x\"}\r\n0\r\n\r\n":     "invalid_json", // chunk longer than its size
		"ffffffffffffffffffff\r\n{}\r\n0\r\n\r\n": "invalid_json", // size overflows
		"3\r\n{}\n": "client_closed_request", // cut short, then the client half-closes
		"2;" + strings.Repeat("x", 10000) + "\r\n{}\r\n0\r\n\r\n": "invalid_json", // oversized chunk extension
	}
	for b, want := range bodies {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		req := "POST /v1/projects/" + prj + "/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + e.Member.Key +
			"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + b
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		_ = conn.(*net.TCPConn).CloseWrite()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		_ = conn.Close()
		wantStatus := http.StatusBadRequest
		if want == "client_closed_request" {
			wantStatus = 499
		}
		if res.StatusCode != wantStatus || !strings.Contains(string(body), `"`+want+`"`) {
			t.Fatalf("%q: want %d %s, got %d: %s", b, wantStatus, want, res.StatusCode, body)
		}
	}
}
