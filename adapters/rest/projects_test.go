package rest_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

func TestCreateProject(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		res := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "  Launch  ", "key": "LAUNCH"})
		res.ExpectStatus(t, http.StatusCreated)
		if got := keysOf(res.JSON); got != "created_at,id,key,name,object,task_count,task_counts,updated_at" {
			t.Fatalf("fields: %s", got)
		}
		if !strings.HasPrefix(res.Str("id"), "prj_") || res.Str("object") != "project" ||
			res.Str("name") != "Launch" || res.Str("key") != "LAUNCH" || res.JSON["task_count"] != float64(0) {
			t.Fatalf("body: %s", res.Body)
		}
		want := e.Clock.Now().UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000Z")
		if res.Str("created_at") != want || res.Str("updated_at") != want {
			t.Fatalf("times: want %s, got %s", want, res.Body)
		}
		if res.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Fatalf("content type %q", res.Header.Get("Content-Type"))
		}
		// What the create returned is exactly what a read returns.
		got := e.Get("/v1/projects/"+res.Str("id"), e.Guest.Key)
		got.ExpectStatus(t, http.StatusOK)
		if string(got.Body) != string(res.Body) {
			t.Fatalf("read differs from create:\n%s\n%s", got.Body, res.Body)
		}
	})
}

func TestCreateProjectErrors(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		ok := map[string]any{"name": "Dup", "key": "DUP"}
		e.Send(http.MethodPost, "/v1/projects", e.Admin.Key, ok).ExpectStatus(t, http.StatusCreated)

		cases := []struct {
			name        string
			req         apitest.Request
			status      int
			code, param string
		}{
			{"no key", apitest.Request{Body: ok}, 401, "missing_api_key", ""},
			{"guest", apitest.Request{Key: e.Guest.Key, Body: map[string]any{"name": "G", "key": "GG"}}, 403, "permission_denied", ""},
			{"not json", apitest.Request{Key: e.Member.Key, Body: "{name:"}, 400, "invalid_json", ""},
			{"empty body", apitest.Request{Key: e.Member.Key, Body: ""}, 400, "invalid_json", ""},
			{"null body", apitest.Request{Key: e.Member.Key, Body: "null"}, 400, "invalid_json", ""},
			{"array body", apitest.Request{Key: e.Member.Key, Body: `[{"name":"a","key":"AB"}]`}, 400, "invalid_json", ""},
			{"two objects", apitest.Request{Key: e.Member.Key, Body: `{"name":"a","key":"AB"}{}`}, 400, "invalid_json", ""},
			{"form body", apitest.Request{Key: e.Member.Key, Body: "name=a&key=AB", ContentType: "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", ""},
			{"too large", apitest.Request{Key: e.Member.Key, Body: `{"name":"` + strings.Repeat("a", 1<<20) + `","key":"BIG"}`}, 413, "request_too_large", ""},
			{"unknown field", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": "a", "key": "AB", "color": "red"}}, 400, "validation_failed", "color"},
			{"missing name", apitest.Request{Key: e.Member.Key, Body: map[string]any{"key": "AB"}}, 400, "validation_failed", "name"},
			{"missing key", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": "a"}}, 400, "validation_failed", "key"},
			{"name null", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": nil, "key": "AB"}}, 400, "validation_failed", "name"},
			{"name number", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": 5, "key": "AB"}}, 400, "validation_failed", "name"},
			{"name blank", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": "   ", "key": "AB"}}, 400, "validation_failed", "name"},
			{"name too long", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": strings.Repeat("é", 201), "key": "AB"}}, 400, "validation_failed", "name"},
			{"name control char", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": "a\u0007b", "key": "AB"}}, 400, "validation_failed", "name"},
			{"key lowercase", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": "a", "key": "ab"}}, 400, "validation_failed", "key"},
			{"key one char", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": "a", "key": "A"}}, 400, "validation_failed", "key"},
			{"key too long", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": "a", "key": "ABCDEFGHIJK"}}, 400, "validation_failed", "key"},
			{"key digit first", apitest.Request{Key: e.Member.Key, Body: map[string]any{"name": "a", "key": "1AB"}}, 400, "validation_failed", "key"},
			{"duplicate key", apitest.Request{Key: e.Member.Key, Body: ok}, 409, "resource_already_exists", "key"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tc.req.Method, tc.req.Path = http.MethodPost, "/v1/projects"
				e.Do(tc.req).ExpectError(t, tc.status, tc.code, tc.param)
			})
		}
		// Nothing was half-written: only the first project exists.
		list := e.Get("/v1/projects", e.Admin.Key)
		if n := len(list.JSON["data"].([]any)); n != 1 {
			t.Fatalf("want 1 project after the failures, got %d", n)
		}
		// Boundaries that are allowed.
		e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": strings.Repeat("é", 200), "key": "ABCDEFGHIJ"}).ExpectStatus(t, 201)
		e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "x", "key": "A1"}).ExpectStatus(t, 201)
		// Keys are unique per workspace only.
		e.Send(http.MethodPost, "/v1/projects", e.Other.Key, ok).ExpectStatus(t, http.StatusCreated)
		// A charset parameter on the media type is fine.
		e.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/projects", Key: e.Member.Key,
			Body: map[string]any{"name": "cs", "key": "CS"}, ContentType: "application/json; charset=utf-8"}).ExpectStatus(t, 201)
	})
}

func TestGetProject(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		p := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "P", "key": "PP"})
		id := p.Str("id")
		for _, who := range []apitest.Member{e.Admin, e.Member, e.Guest} {
			e.Get("/v1/projects/"+id, who.Key).ExpectStatus(t, http.StatusOK)
		}
		e.Get("/v1/projects/"+id, "").ExpectError(t, 401, "missing_api_key", "")
		e.Get("/v1/projects/prj_doesnotexist0000000000", e.Admin.Key).ExpectError(t, 404, "resource_not_found", "")
		e.Get("/v1/projects/tsk_wrongkind", e.Admin.Key).ExpectError(t, 404, "resource_not_found", "")
		// Another workspace's project is answered exactly like an absent one.
		foreign := e.Get("/v1/projects/"+id, e.Other.Key)
		foreign.ExpectError(t, 404, "resource_not_found", "")
		absent := e.Get("/v1/projects/prj_doesnotexist0000000000", e.Other.Key)
		if strings.ReplaceAll(foreign.ErrorField("message"), id, "X") != strings.ReplaceAll(absent.ErrorField("message"), "prj_doesnotexist0000000000", "X") {
			t.Fatalf("foreign and absent differ: %s vs %s", foreign.Body, absent.Body)
		}
	})
}

func TestUpdateProject(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		p := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Old", "key": "UPD"})
		path := "/v1/projects/" + p.Str("id")

		e.Clock.Advance(time.Second)
		up := e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"name": "New"})
		up.ExpectStatus(t, http.StatusOK)
		if up.Str("name") != "New" || up.Str("key") != "UPD" || up.Str("created_at") != p.Str("created_at") || up.Str("updated_at") == p.Str("updated_at") {
			t.Fatalf("update: %s", up.Body)
		}
		if got := e.Get(path, e.Guest.Key); string(got.Body) != string(up.Body) {
			t.Fatalf("read differs from update: %s vs %s", got.Body, up.Body)
		}

		// A no-op (same name, or no field) changes nothing, updated_at included.
		e.Clock.Advance(time.Second)
		for _, body := range []any{map[string]any{"name": "New"}, map[string]any{}} {
			same := e.Send(http.MethodPatch, path, e.Member.Key, body)
			same.ExpectStatus(t, http.StatusOK)
			if string(same.Body) != string(up.Body) {
				t.Fatalf("no-op changed the project: %s vs %s", same.Body, up.Body)
			}
		}

		e.Send(http.MethodPatch, path, e.Guest.Key, map[string]any{"name": "G"}).ExpectError(t, 403, "permission_denied", "")
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"name": nil}).ExpectError(t, 400, "validation_failed", "name")
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"name": ""}).ExpectError(t, 400, "validation_failed", "name")
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"name": true}).ExpectError(t, 400, "validation_failed", "name")
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"key": "NEW"}).ExpectError(t, 400, "validation_failed", "key")
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"task_count": 3}).ExpectError(t, 400, "validation_failed", "task_count")
		e.Send(http.MethodPatch, path, e.Member.Key, "[]").ExpectError(t, 400, "invalid_json", "")
		e.Do(apitest.Request{Method: http.MethodPatch, Path: path, Key: e.Member.Key, Body: "name=x", ContentType: "text/plain"}).ExpectError(t, 415, "unsupported_media_type", "")
		e.Send(http.MethodPatch, path, e.Other.Key, map[string]any{"name": "Mine"}).ExpectError(t, 404, "resource_not_found", "")
		e.Send(http.MethodPatch, "/v1/projects/prj_nope000000000000000000", e.Member.Key, map[string]any{"name": "x"}).ExpectError(t, 404, "resource_not_found", "")

		// None of the refused calls changed anything.
		if got := e.Get(path, e.Guest.Key); string(got.Body) != string(up.Body) {
			t.Fatalf("a refused update wrote: %s vs %s", got.Body, up.Body)
		}
	})
}

// pageThrough follows next_cursor to the end and returns the ids of each page.
func pageThrough(t *testing.T, e *apitest.Env, path, key string) [][]string {
	t.Helper()
	var pages [][]string
	url := path
	for i := 0; i < 100; i++ {
		res := e.Get(url, key)
		res.ExpectStatus(t, http.StatusOK)
		if res.Str("object") != "list" {
			t.Fatalf("not a list: %s", res.Body)
		}
		var ids []string
		for _, it := range res.JSON["data"].([]any) {
			ids = append(ids, it.(map[string]any)["id"].(string))
		}
		pages = append(pages, ids)
		pg := res.JSON["pagination"].(map[string]any)
		if keysOf(pg) != "has_more,next_cursor" {
			t.Fatalf("pagination fields: %v", pg)
		}
		if pg["has_more"] == false {
			if pg["next_cursor"] != nil {
				t.Fatalf("last page must have next_cursor null: %v", pg)
			}
			return pages
		}
		cur, ok := pg["next_cursor"].(string)
		if !ok || cur == "" {
			t.Fatalf("has_more without next_cursor: %v", pg)
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		url = path + sep + "cursor=" + cur
	}
	t.Fatal("pagination did not end")
	return nil
}

func TestListProjectsPagination(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		var want []string
		for i := 0; i < 45; i++ {
			// Every third project shares its creation instant with the one
			// before, so ties are broken by id.
			if i%3 != 0 {
				e.Clock.Advance(time.Millisecond)
			}
			res := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": fmt.Sprint("P", i), "key": fmt.Sprintf("K%d", i)})
			res.ExpectStatus(t, 201)
			want = append(want, res.Str("id"))
		}
		e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "Foreign", "key": "FOREIGN"}).ExpectStatus(t, 201)

		pages := pageThrough(t, e, "/v1/projects", e.Guest.Key)
		if len(pages) != 3 || len(pages[0]) != 20 || len(pages[1]) != 20 || len(pages[2]) != 5 {
			t.Fatalf("want pages of 20/20/5, got %d pages", len(pages))
		}
		var got []string
		for _, p := range pages {
			got = append(got, p...)
		}
		// The order is (created_at, id): sort want by the server's own order.
		sorted := e.Get("/v1/projects?limit=100", e.Guest.Key)
		var all []string
		for _, it := range sorted.JSON["data"].([]any) {
			all = append(all, it.(map[string]any)["id"].(string))
		}
		if strings.Join(got, ",") != strings.Join(all, ",") || len(all) != 45 {
			t.Fatalf("pages do not cover the list exactly once in order")
		}
		seen := map[string]bool{}
		for _, id := range got {
			if seen[id] {
				t.Fatalf("%s returned twice", id)
			}
			seen[id] = true
		}
		for _, id := range want {
			if !seen[id] {
				t.Fatalf("%s never returned", id)
			}
		}

		limits := e.Get("/v1/projects?limit=45", e.Guest.Key)
		if limits.JSON["pagination"].(map[string]any)["has_more"] != false {
			t.Fatalf("exactly 45 with limit 45 must not have more: %s", limits.Body)
		}
		for _, bad := range []string{"0", "101", "abc", "-1", "1.5", ""} {
			e.Get("/v1/projects?limit="+bad, e.Guest.Key).ExpectError(t, 400, "validation_failed", "limit")
		}
		first := e.Get("/v1/projects?limit=2", e.Guest.Key)
		cur := first.JSON["pagination"].(map[string]any)["next_cursor"].(string)
		tampered := []byte(cur)
		tampered[len(tampered)/2] ^= 1
		if tampered[len(tampered)/2] == '-' || tampered[len(tampered)/2] == '_' {
			tampered[len(tampered)/2] = 'A'
		}
		for _, bad := range []string{string(tampered), "garbage", cur[:len(cur)-2]} {
			e.Get("/v1/projects?cursor="+bad, e.Guest.Key).ExpectError(t, 400, "validation_failed", "cursor")
		}
		// A cursor of another list, or of another workspace, is refused.
		e.Get("/v1/users?cursor="+cur, e.Guest.Key).ExpectError(t, 400, "validation_failed", "cursor")
		e.Get("/v1/projects?cursor="+cur, e.Other.Key).ExpectError(t, 400, "validation_failed", "cursor")
	})
}

func TestConcurrentDuplicateProjectKey(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		statuses := make([]int, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				statuses[i] = e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": fmt.Sprint("R", i), "key": "RACE"}).Status
			}()
		}
		close(start)
		wg.Wait()
		sort.Ints(statuses)
		if statuses[0] != 201 || statuses[1] != 409 {
			t.Fatalf("want one 201 and one 409, got %v", statuses)
		}
		var n int64
		if err := db.Gorm().Table("projects").Where("key = ?", "RACE").Count(&n).Error; err != nil || n != 1 {
			t.Fatalf("want one row, got %d (%v)", n, err)
		}
	})
}

func TestConcurrentWritersSQLite(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, storetest.SQLite(t))
	const writers = 20
	statuses := make(chan string, writers*3)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "W", "key": fmt.Sprintf("W%d", i)})
			statuses <- fmt.Sprint(res.Status, " ", string(res.Body))
			if res.Status == 201 {
				up := e.Send(http.MethodPatch, "/v1/projects/"+res.Str("id"), e.Member.Key, map[string]any{"name": "W2"})
				statuses <- fmt.Sprint(up.Status, " ", string(up.Body))
			}
		}()
	}
	close(start)
	wg.Wait()
	close(statuses)
	n := 0
	for s := range statuses {
		n++
		if !strings.HasPrefix(s, "201 ") && !strings.HasPrefix(s, "200 ") {
			t.Errorf("a writer failed: %s", s)
		}
	}
	if n != writers*2 {
		t.Fatalf("want %d responses, got %d", writers*2, n)
	}
	if strings.Contains(e.Logs.String(), "locked") || strings.Contains(e.Logs.String(), "BUSY") {
		t.Fatalf("the log shows lock errors: %s", e.Logs.String())
	}

}
