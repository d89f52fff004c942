package rest_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

func newProject(t *testing.T, e *apitest.Env, key string) string {
	t.Helper()
	res := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Project " + key, "key": key})
	res.ExpectStatus(t, http.StatusCreated)
	return res.Str("id")
}

func newTask(t *testing.T, e *apitest.Env, projectID string, body map[string]any) *apitest.Response {
	t.Helper()
	res := e.Send(http.MethodPost, "/v1/projects/"+projectID+"/tasks", e.Member.Key, body)
	res.ExpectStatus(t, http.StatusCreated)
	return res
}

func taskCount(t *testing.T, e *apitest.Env, projectID string) int {
	t.Helper()
	res := e.Get("/v1/projects/"+projectID, e.Guest.Key)
	res.ExpectStatus(t, 200)
	return int(res.JSON["task_count"].(float64))
}

func TestCreateAndGetTask(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "TSK")
		before := e.Get("/v1/projects/"+prj, e.Guest.Key)

		res := newTask(t, e, prj, map[string]any{"title": " Write spec ", "assignee_id": e.Guest.User.ID, "due_at": "2026-04-01T10:00:00.1234567+02:00", "status": "in_progress"})
		if got := keysOf(res.JSON); got != "assignee_id,created_at,due_at,id,object,project_id,status,title,updated_at" {
			t.Fatalf("fields: %s", got)
		}
		if !strings.HasPrefix(res.Str("id"), "tsk_") || res.Str("object") != "task" || res.Str("project_id") != prj ||
			res.Str("title") != "Write spec" || res.Str("status") != "in_progress" || res.Str("assignee_id") != e.Guest.User.ID ||
			res.Str("due_at") != "2026-04-01T08:00:00.123456Z" || res.Str("created_at") != res.Str("updated_at") {
			t.Fatalf("task: %s", res.Body)
		}
		got := e.Get("/v1/tasks/"+res.Str("id"), e.Guest.Key)
		got.ExpectStatus(t, 200)
		if string(got.Body) != string(res.Body) {
			t.Fatalf("read differs from create: %s vs %s", got.Body, res.Body)
		}

		// Defaults: open, nulls present.
		plain := newTask(t, e, prj, map[string]any{"title": "Plain"})
		if plain.Str("status") != "open" || plain.JSON["assignee_id"] != nil || plain.JSON["due_at"] != nil {
			t.Fatalf("defaults: %s", plain.Body)
		}
		if _, ok := plain.JSON["assignee_id"]; !ok {
			t.Fatal("assignee_id must be present as null")
		}
		if taskCount(t, e, prj) != 2 {
			t.Fatalf("task_count %d", taskCount(t, e, prj))
		}
		// Creating tasks leaves the project's updated_at alone.
		if after := e.Get("/v1/projects/"+prj, e.Guest.Key); after.Str("updated_at") != before.Str("updated_at") {
			t.Fatalf("updated_at moved: %s -> %s", before.Str("updated_at"), after.Str("updated_at"))
		}
	})
}

func TestCreateTaskErrors(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "ERR")
		foreignPrj := e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "F", "key": "FOR"}).Str("id")
		path := "/v1/projects/" + prj + "/tasks"
		cases := []struct {
			name        string
			path        string
			key         string
			body        any
			status      int
			code, param string
		}{
			{"guest", path, e.Guest.Key, map[string]any{"title": "x"}, 403, "permission_denied", ""},
			{"no key", path, "", map[string]any{"title": "x"}, 401, "missing_api_key", ""},
			{"archived", path, e.Member.Key, map[string]any{"title": "x", "status": "archived"}, 400, "validation_failed", "status"},
			{"bad status", path, e.Member.Key, map[string]any{"title": "x", "status": "closed"}, 400, "validation_failed", "status"},
			{"status null", path, e.Member.Key, map[string]any{"title": "x", "status": nil}, 400, "validation_failed", "status"},
			{"no title", path, e.Member.Key, map[string]any{"status": "open"}, 400, "validation_failed", "title"},
			{"title null", path, e.Member.Key, map[string]any{"title": nil}, 400, "validation_failed", "title"},
			{"title blank", path, e.Member.Key, map[string]any{"title": "  "}, 400, "validation_failed", "title"},
			{"title long", path, e.Member.Key, map[string]any{"title": strings.Repeat("t", 501)}, 400, "validation_failed", "title"},
			{"title number", path, e.Member.Key, map[string]any{"title": 7}, 400, "validation_failed", "title"},
			{"foreign assignee", path, e.Member.Key, map[string]any{"title": "x", "assignee_id": e.Other.User.ID}, 400, "validation_failed", "assignee_id"},
			{"absent assignee", path, e.Member.Key, map[string]any{"title": "x", "assignee_id": "usr_nobody00000000000000"}, 400, "validation_failed", "assignee_id"},
			{"assignee of wrong kind", path, e.Member.Key, map[string]any{"title": "x", "assignee_id": prj}, 400, "validation_failed", "assignee_id"},
			{"bad due_at", path, e.Member.Key, map[string]any{"title": "x", "due_at": "tomorrow"}, 400, "validation_failed", "due_at"},
			{"due_at number", path, e.Member.Key, map[string]any{"title": "x", "due_at": 5}, 400, "validation_failed", "due_at"},
			{"unknown field", path, e.Member.Key, map[string]any{"title": "x", "priority": 1}, 400, "validation_failed", "priority"},
			{"not json", path, e.Member.Key, "{", 400, "invalid_json", ""},
			{"foreign project", "/v1/projects/" + foreignPrj + "/tasks", e.Member.Key, map[string]any{"title": "x"}, 404, "resource_not_found", ""},
			{"absent project", "/v1/projects/prj_nope0000000000000000/tasks", e.Member.Key, map[string]any{"title": "x"}, 404, "resource_not_found", ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e.Send(http.MethodPost, tc.path, tc.key, tc.body).ExpectError(t, tc.status, tc.code, tc.param)
			})
		}
		e.Do(apitest.Request{Method: http.MethodPost, Path: path, Key: e.Member.Key, Body: "title=x", ContentType: "text/plain"}).ExpectError(t, 415, "unsupported_media_type", "")
		// Nothing was half-written.
		if taskCount(t, e, prj) != 0 {
			t.Fatal("a refused create wrote a task")
		}
		if list := e.Get(path, e.Guest.Key); len(list.JSON["data"].([]any)) != 0 {
			t.Fatalf("a refused create wrote a task: %s", list.Body)
		}
	})
}

// Every cell of the transition table of docs/api.md#task-status.
func TestStatusTransitionTable(t *testing.T) {
	t.Parallel()
	allowed := map[string]map[string]bool{
		"open":        {"in_progress": true, "done": true, "archived": true},
		"in_progress": {"open": true, "done": true, "archived": true},
		"done":        {"open": true, "in_progress": true, "archived": true},
		"archived":    {"open": true},
	}
	statuses := []string{"open", "in_progress", "done", "archived"}
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "SM")
		for _, from := range statuses {
			for _, to := range statuses {
				t.Run(from+"->"+to, func(t *testing.T) {
					task := newTask(t, e, prj, map[string]any{"title": "t"})
					path := "/v1/tasks/" + task.Str("id")
					if from != "open" {
						e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"status": from}).ExpectStatus(t, 200)
					}
					before := e.Get(path, e.Guest.Key)
					e.Clock.Advance(time.Second)
					res := e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"status": to})
					switch {
					case from == to:
						res.ExpectStatus(t, 200)
						if string(res.Body) != string(before.Body) {
							t.Fatalf("same status must be a no-op: %s vs %s", res.Body, before.Body)
						}
					case allowed[from][to]:
						res.ExpectStatus(t, 200)
						if res.Str("status") != to || res.Str("updated_at") == before.Str("updated_at") {
							t.Fatalf("moved: %s", res.Body)
						}
					default:
						res.ExpectError(t, 409, "invalid_status_transition", "")
						if after := e.Get(path, e.Guest.Key); string(after.Body) != string(before.Body) {
							t.Fatalf("a refused transition wrote: %s", after.Body)
						}
					}
				})
			}
		}
	})
}

func TestArchivedTask(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "ARC")
		task := newTask(t, e, prj, map[string]any{"title": "Old"})
		path := "/v1/tasks/" + task.Str("id")
		archived := e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"status": "archived"})
		archived.ExpectStatus(t, 200)

		for _, body := range []map[string]any{
			{"title": "New"},
			{"assignee_id": e.Guest.User.ID},
			{"due_at": "2026-05-01T00:00:00Z"},
			{"title": "New", "status": "done"},
			{"status": "in_progress"},
		} {
			e.Send(http.MethodPatch, path, e.Member.Key, body).ExpectError(t, 409, "invalid_status_transition", "")
		}
		// Changing nothing is a no-op even on an archived task.
		for _, body := range []map[string]any{{"title": "Old"}, {"status": "archived"}, {"assignee_id": nil}, {}} {
			same := e.Send(http.MethodPatch, path, e.Member.Key, body)
			same.ExpectStatus(t, 200)
			if string(same.Body) != string(archived.Body) {
				t.Fatalf("no-op on archived changed it: %s", same.Body)
			}
		}
		// Reopening may carry other changes.
		e.Clock.Advance(time.Second)
		reopened := e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"status": "open", "title": "Reopened", "assignee_id": e.Member.User.ID})
		reopened.ExpectStatus(t, 200)
		if reopened.Str("status") != "open" || reopened.Str("title") != "Reopened" || reopened.Str("assignee_id") != e.Member.User.ID {
			t.Fatalf("reopen: %s", reopened.Body)
		}
	})
}

func TestTaskMergePatch(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "MP")
		task := newTask(t, e, prj, map[string]any{"title": "T", "assignee_id": e.Member.User.ID, "due_at": "2026-06-01T12:00:00Z"})
		path := "/v1/tasks/" + task.Str("id")

		// Absent fields are left alone.
		e.Clock.Advance(time.Second)
		res := e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"title": "T2"})
		res.ExpectStatus(t, 200)
		if res.Str("assignee_id") != e.Member.User.ID || res.Str("due_at") != "2026-06-01T12:00:00.000000Z" || res.Str("status") != "open" {
			t.Fatalf("absent fields changed: %s", res.Body)
		}
		// null clears nullable fields.
		res = e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"assignee_id": nil})
		if res.JSON["assignee_id"] != nil || res.Str("due_at") == "" {
			t.Fatalf("assignee null: %s", res.Body)
		}
		res = e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"due_at": nil})
		if res.JSON["due_at"] != nil || res.Str("title") != "T2" {
			t.Fatalf("due_at null: %s", res.Body)
		}
		// null is refused for required fields.
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"title": nil}).ExpectError(t, 400, "validation_failed", "title")
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"status": nil}).ExpectError(t, 400, "validation_failed", "status")
		// Setting values again.
		res = e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"assignee_id": e.Guest.User.ID, "due_at": "2027-01-01T00:00:00Z"})
		if res.Str("assignee_id") != e.Guest.User.ID || res.Str("due_at") != "2027-01-01T00:00:00.000000Z" {
			t.Fatalf("set: %s", res.Body)
		}
		// A no-op leaves updated_at alone.
		e.Clock.Advance(time.Second)
		same := e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"assignee_id": e.Guest.User.ID, "due_at": "2027-01-01T01:00:00+01:00", "title": "T2"})
		same.ExpectStatus(t, 200)
		if string(same.Body) != string(res.Body) {
			t.Fatalf("no-op changed the task: %s vs %s", same.Body, res.Body)
		}
		// Errors.
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"assignee_id": e.Other.User.ID}).ExpectError(t, 400, "validation_failed", "assignee_id")
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"due_at": "2027-13-01"}).ExpectError(t, 400, "validation_failed", "due_at")
		e.Send(http.MethodPatch, path, e.Member.Key, map[string]any{"project_id": prj}).ExpectError(t, 400, "validation_failed", "project_id")
		e.Send(http.MethodPatch, path, e.Guest.Key, map[string]any{"title": "G"}).ExpectError(t, 403, "permission_denied", "")
		e.Send(http.MethodPatch, path, e.Other.Key, map[string]any{"title": "O"}).ExpectError(t, 404, "resource_not_found", "")
		e.Send(http.MethodPatch, "/v1/tasks/tsk_nope000000000000000000", e.Member.Key, map[string]any{"title": "O"}).ExpectError(t, 404, "resource_not_found", "")
		if after := e.Get(path, e.Guest.Key); string(after.Body) != string(res.Body) {
			t.Fatalf("a refused update wrote: %s", after.Body)
		}
	})
}

func TestDeleteTask(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "DEL")
		var ids []string
		for i := 0; i < 3; i++ {
			ids = append(ids, newTask(t, e, prj, map[string]any{"title": fmt.Sprint("t", i)}).Str("id"))
		}
		e.Send(http.MethodPatch, "/v1/tasks/"+ids[2], e.Member.Key, map[string]any{"status": "archived"}).ExpectStatus(t, 200)
		if taskCount(t, e, prj) != 3 {
			t.Fatal("archived tasks count")
		}
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + ids[0], Key: e.Guest.Key}).ExpectError(t, 403, "permission_denied", "")
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + ids[0], Key: e.Other.Key}).ExpectError(t, 404, "resource_not_found", "")
		res := e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + ids[0], Key: e.Member.Key})
		res.ExpectStatus(t, http.StatusNoContent)
		if len(res.Body) != 0 {
			t.Fatalf("204 with a body: %s", res.Body)
		}
		e.Get("/v1/tasks/"+ids[0], e.Guest.Key).ExpectError(t, 404, "resource_not_found", "")
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + ids[0], Key: e.Member.Key}).ExpectError(t, 404, "resource_not_found", "")
		if taskCount(t, e, prj) != 2 {
			t.Fatalf("task_count after delete: %d", taskCount(t, e, prj))
		}
		// Deleting an archived task is allowed.
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + ids[2], Key: e.Admin.Key}).ExpectStatus(t, 204)
		if taskCount(t, e, prj) != 1 {
			t.Fatalf("task_count: %d", taskCount(t, e, prj))
		}
	})
}

func TestTaskTenancyAndReads(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "TEN")
		id := newTask(t, e, prj, map[string]any{"title": "secret"}).Str("id")
		e.Get("/v1/tasks/"+id, e.Other.Key).ExpectError(t, 404, "resource_not_found", "")
		e.Get("/v1/projects/"+prj+"/tasks", e.Other.Key).ExpectError(t, 404, "resource_not_found", "")
		e.Get("/v1/projects/prj_nope0000000000000000/tasks", e.Guest.Key).ExpectError(t, 404, "resource_not_found", "")
		e.Get("/v1/tasks/"+prj, e.Guest.Key).ExpectError(t, 404, "resource_not_found", "")
		e.Get("/v1/tasks/"+id, "").ExpectError(t, 401, "missing_api_key", "")
		e.Get("/v1/projects/"+prj+"/tasks?status=closed", e.Guest.Key).ExpectError(t, 400, "validation_failed", "status")
		e.Get("/v1/projects/"+prj+"/tasks?limit=0", e.Guest.Key).ExpectError(t, 400, "validation_failed", "limit")
		// An empty project lists nothing, but exists.
		empty := newProject(t, e, "EMPTY")
		res := e.Get("/v1/projects/"+empty+"/tasks", e.Guest.Key)
		res.ExpectStatus(t, 200)
		if len(res.JSON["data"].([]any)) != 0 {
			t.Fatalf("empty: %s", res.Body)
		}
	})
}

// 45 tasks match a combined filter among others that do not; pages of
// 20/20/5 return each exactly once even when a matching task is inserted and
// another deleted between pages.
func TestTaskListFiltersWithPagination(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "PAG")
		var matching []string
		for i := 0; len(matching) < 45; i++ {
			e.Clock.Advance(time.Millisecond)
			body := map[string]any{"title": fmt.Sprint("t", i), "status": "in_progress", "assignee_id": e.Guest.User.ID}
			switch i % 4 {
			case 1:
				body["status"] = "open" // noise: other status
			case 2:
				body["assignee_id"] = e.Member.User.ID // noise: other assignee
			}
			res := newTask(t, e, prj, body)
			if i%4 == 0 || i%4 == 3 {
				matching = append(matching, res.Str("id"))
			}
		}

		base := "/v1/projects/" + prj + "/tasks?status=in_progress&assignee_id=" + e.Guest.User.ID
		seen := map[string]int{}
		url := base
		var sizes []int
		var deleted string
		for page := 0; ; page++ {
			res := e.Get(url, e.Guest.Key)
			res.ExpectStatus(t, 200)
			items := res.JSON["data"].([]any)
			sizes = append(sizes, len(items))
			for _, it := range items {
				m := it.(map[string]any)
				if m["status"] != "in_progress" || m["assignee_id"] != e.Guest.User.ID {
					t.Fatalf("filter leaked: %v", m)
				}
				seen[m["id"].(string)]++
			}
			pg := res.JSON["pagination"].(map[string]any)
			if page == 0 {
				// Between pages: a new matching task (it sorts last, so it is
				// part of the iteration) and the deletion of one not yet seen.
				e.Clock.Advance(time.Second)
				newTask(t, e, prj, map[string]any{"title": "late", "status": "in_progress", "assignee_id": e.Guest.User.ID})
				deleted = matching[30]
				e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + deleted, Key: e.Member.Key}).ExpectStatus(t, 204)
			}
			if pg["has_more"] == false {
				if pg["next_cursor"] != nil {
					t.Fatal("next_cursor on the last page")
				}
				break
			}
			url = base + "&cursor=" + pg["next_cursor"].(string)
		}
		if fmt.Sprint(sizes) != "[20 20 5]" {
			t.Fatalf("page sizes %v", sizes)
		}
		for _, id := range matching {
			if id == deleted {
				continue
			}
			if seen[id] != 1 {
				t.Fatalf("%s seen %d times", id, seen[id])
			}
		}
		if seen[deleted] != 0 {
			t.Fatal("a task deleted before its page was returned")
		}
		// A cursor is bound to its filter.
		first := e.Get(base+"&limit=5", e.Guest.Key)
		cur := first.JSON["pagination"].(map[string]any)["next_cursor"].(string)
		e.Get("/v1/projects/"+prj+"/tasks?status=open&cursor="+cur, e.Guest.Key).ExpectError(t, 400, "validation_failed", "cursor")
		e.Get("/v1/projects/"+prj+"/tasks?cursor="+cur, e.Guest.Key).ExpectError(t, 400, "validation_failed", "cursor")
	})
}

// 50 concurrent creates and 25 concurrent deletes leave task_count equal to
// the number of rows.
func TestTaskCountUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, storetest.Postgres(t))
	prj := newProject(t, e, "CONC")
	var pre []string
	for i := 0; i < 25; i++ {
		pre = append(pre, newTask(t, e, prj, map[string]any{"title": "pre"}).Str("id"))
	}
	var wg sync.WaitGroup
	failures := make(chan string, 100)
	start := make(chan struct{})
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if res := e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Member.Key, map[string]any{"title": "c"}); res.Status != 201 {
				failures <- string(res.Body)
			}
		}()
	}
	for _, id := range pre {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if res := e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + id, Key: e.Member.Key}); res.Status != 204 {
				failures <- string(res.Body)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Errorf("request failed: %s", f)
	}
	var rows int64
	if err := e.DB.Gorm().Table("tasks").Where("project_id = ?", prj).Count(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if got := taskCount(t, e, prj); rows != 50 || got != 50 {
		t.Fatalf("rows %d, task_count %d, want 50", rows, got)
	}
}
