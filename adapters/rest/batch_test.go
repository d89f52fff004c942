package rest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

// batchOf is a bulk body of n tasks titled prefix 0, prefix 1, ….
func batchOf(prefix string, n int) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"title": fmt.Sprintf("%s %d", prefix, i)}
	}
	return map[string]any{"tasks": items}
}

func createBatch(t *testing.T, e *apitest.Env, key, projectID string, body any) []map[string]any {
	t.Helper()
	res := e.Send(http.MethodPost, "/v1/projects/"+projectID+"/tasks/batch", key, body)
	res.ExpectStatus(t, http.StatusCreated)
	if res.Str("object") != "list" || keysOf(res.JSON) != "data,object" {
		t.Fatalf("a bulk creation answers a list of the tasks, without pagination: %.300s", res.Body)
	}
	var out []map[string]any
	for _, it := range res.JSON["data"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func idsOf(tasks []map[string]any) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t["id"].(string)
	}
	return out
}

// projectCounts is a project's task_count and task_counts.
func projectCounts(t *testing.T, e *apitest.Env, projectID string) (int, map[string]int) {
	t.Helper()
	res := e.Get("/v1/projects/"+projectID, e.Guest.Key)
	res.ExpectStatus(t, http.StatusOK)
	by := map[string]int{}
	for k, v := range res.JSON["task_counts"].(map[string]any) {
		by[k] = int(v.(float64))
	}
	return int(res.JSON["task_count"].(float64)), by
}

// listTaskIDs pages through a project's tasks, oldest first.
func listTaskIDs(t *testing.T, e *apitest.Env, projectID string) []string {
	t.Helper()
	var ids []string
	path := "/v1/projects/" + projectID + "/tasks?limit=100"
	for {
		res := e.Get(path, e.Guest.Key)
		res.ExpectStatus(t, http.StatusOK)
		for _, it := range res.JSON["data"].([]any) {
			ids = append(ids, it.(map[string]any)["id"].(string))
		}
		p := res.JSON["pagination"].(map[string]any)
		if p["has_more"] != true {
			return ids
		}
		path = "/v1/projects/" + projectID + "/tasks?limit=100&cursor=" + url.QueryEscape(p["next_cursor"].(string))
	}
}

// One item and 500: the tasks come back in the order given, are created in
// that order, are counted, and their task.created events are consecutive in
// the log in that order while single creates commit beside them.
func TestCreateTasksInBulk(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "BULK")

		one := createBatch(t, e, e.Member.Key, prj, map[string]any{"tasks": []any{map[string]any{
			"title": " Import me ", "status": "in_progress", "assignee_id": e.Guest.User.ID, "due_at": "2026-04-01T10:00:00Z",
		}}})
		if len(one) != 1 || one[0]["title"] != "Import me" || one[0]["status"] != "in_progress" ||
			one[0]["assignee_id"] != e.Guest.User.ID || one[0]["due_at"] != "2026-04-01T10:00:00.000000Z" || one[0]["project_id"] != prj {
			t.Fatalf("one item: %v", one)
		}
		if got := e.Get("/v1/tasks/"+one[0]["id"].(string), e.Guest.Key); got.Str("title") != "Import me" {
			t.Fatalf("the created task reads back: %s", got.Body)
		}

		// Single creates into the same project, beside the batch.
		var wg sync.WaitGroup
		singles := make(chan string, 40)
		for w := range 4 {
			wg.Go(func() {
				for i := range 10 {
					res := e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Member.Key, map[string]any{"title": fmt.Sprintf("single %d.%d", w, i)})
					if res.Status != http.StatusCreated {
						t.Errorf("single create: %d %s", res.Status, res.Body)
						return
					}
					singles <- res.Str("id")
				}
			})
		}
		items := make([]any, domain.MaxBatchItems)
		for i := range items {
			item := map[string]any{"title": fmt.Sprintf("Row %03d", i)}
			if i%3 == 1 {
				item["status"] = "done"
			}
			items[i] = item
		}
		many := createBatch(t, e, e.Member.Key, prj, map[string]any{"tasks": items})
		wg.Wait()
		close(singles)
		if len(many) != domain.MaxBatchItems {
			t.Fatalf("%d tasks answered, want %d", len(many), domain.MaxBatchItems)
		}
		for i, task := range many {
			if task["title"] != fmt.Sprintf("Row %03d", i) {
				t.Fatalf("item %d answered as %v: the answer is not in the order given", i, task["title"])
			}
			if i > 0 && task["created_at"].(string) <= many[i-1]["created_at"].(string) {
				t.Fatalf("created_at of items %d and %d: %s, %s: not strictly in the order given",
					i-1, i, many[i-1]["created_at"], task["created_at"])
			}
		}

		// Listed oldest first, the batch reads in the order given.
		listed := listTaskIDs(t, e, prj)
		var batchListed []string
		batchIDs := idsOf(many)
		for _, id := range listed {
			if slices.Contains(batchIDs, id) {
				batchListed = append(batchListed, id)
			}
		}
		if !slices.Equal(batchListed, batchIDs) {
			t.Fatal("the project's tasks, oldest first, do not list the batch in the order given")
		}

		total, by := projectCounts(t, e, prj)
		if total != 1+domain.MaxBatchItems+40 || len(listed) != total {
			t.Fatalf("task_count %d, listed %d, want %d", total, len(listed), 1+domain.MaxBatchItems+40)
		}
		done := domain.MaxBatchItems / 3
		if domain.MaxBatchItems%3 == 2 {
			done++
		}
		if by["done"] != done || by["in_progress"] != 1 || by["open"] != total-done-1 || by["archived"] != 0 {
			t.Fatalf("task_counts %v, want done %d, in_progress 1", by, done)
		}

		// One task.created each, consecutive in the log in the order given.
		logged := listAll(t, e, e.Guest.Key, url.Values{"type": {"task.created"}, "limit": {"100"}})
		var order []string
		for _, ev := range logged {
			order = append(order, ev.Data.ID)
		}
		at := slices.Index(order, batchIDs[0])
		if at < 0 || at+len(batchIDs) > len(order) || !slices.Equal(order[at:at+len(batchIDs)], batchIDs) {
			t.Fatal("the batch's task.created events are not consecutive in the log in the order given")
		}
		if len(order) != total {
			t.Fatalf("%d task.created events, want one per task (%d)", len(order), total)
		}
		for id := range singles {
			if !slices.Contains(order, id) {
				t.Fatalf("single create %s has no event", id)
			}
		}
	})
}

// Every bad body is refused with the param of the item at fault, and
// nothing of the batch is written: no task, no count, no event.
func TestCreateTasksInBulkIsAllOrNothing(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "NONE")
		ok := map[string]any{"title": "fine"}
		with := func(bad any) map[string]any { return map[string]any{"tasks": []any{ok, ok, ok, bad}} }
		tooMany := batchOf("x", domain.MaxBatchItems+1)
		for _, c := range []struct {
			name  string
			body  any
			param string
		}{
			{"no tasks member", map[string]any{}, "tasks"},
			{"empty list", map[string]any{"tasks": []any{}}, "tasks"},
			{"null list", map[string]any{"tasks": nil}, "tasks"},
			{"not a list", map[string]any{"tasks": "a"}, "tasks"},
			{"501 items", tooMany, "tasks"},
			{"unknown member", map[string]any{"tasks": []any{ok}, "project": "x"}, "project"},
			{"an item that is not an object", with(7), "tasks[3]"},
			{"an item that is null", with(nil), "tasks[3]"},
			{"no title", with(map[string]any{"status": "open"}), "tasks[3].title"},
			{"empty title", with(map[string]any{"title": "  "}), "tasks[3].title"},
			{"title of another JSON type", with(map[string]any{"title": 5}), "tasks[3].title"},
			{"unknown field", with(map[string]any{"title": "a", "colour": "red"}), "tasks[3].colour"},
			{"archived on creation", with(map[string]any{"title": "a", "status": "archived"}), "tasks[3].status"},
			{"unknown status", with(map[string]any{"title": "a", "status": "later"}), "tasks[3].status"},
			{"bad due_at", with(map[string]any{"title": "a", "due_at": "tomorrow"}), "tasks[3].due_at"},
			{"ill-formed assignee", with(map[string]any{"title": "a", "assignee_id": "bob"}), "tasks[3].assignee_id"},
			{"assignee of another workspace", with(map[string]any{"title": "a", "assignee_id": e.Other.User.ID}), "tasks[3].assignee_id"},
			{"the first bad item is named", map[string]any{"tasks": []any{ok, map[string]any{"title": ""}, map[string]any{}}}, "tasks[1].title"},
		} {
			t.Run(c.name, func(t *testing.T) {
				e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks/batch", e.Member.Key, c.body).
					ExpectError(t, http.StatusBadRequest, "validation_failed", c.param)
			})
		}
		e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks/batch", e.Member.Key, `{"tasks": [`).
			ExpectError(t, http.StatusBadRequest, "invalid_json", "")
		if total, by := projectCounts(t, e, prj); total != 0 || by["open"] != 0 {
			t.Fatalf("a refused batch counted tasks: %d %v", total, by)
		}
		if ids := listTaskIDs(t, e, prj); len(ids) != 0 {
			t.Fatalf("a refused batch wrote %d tasks", len(ids))
		}
		if logged := listAll(t, e, e.Guest.Key, url.Values{"type": {"task.created"}}); len(logged) != 0 {
			t.Fatalf("a refused batch logged %d events", len(logged))
		}
	})
}

// The rules of one create: the role, the scope, a restricted key's
// projects; another workspace's project does not exist, and that workspace
// sees nothing of the batch.
func TestCreateTasksInBulkScopesAndTenants(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "SCP")
		other := newProject(t, e, "OTR")
		path := "/v1/projects/" + prj + "/tasks/batch"
		body := batchOf("t", 2)

		e.Send(http.MethodPost, path, e.Guest.Key, body).ExpectError(t, http.StatusForbidden, "permission_denied", "")
		readOnly := e.KeyFor(e.Member.User, []string{string(domain.ScopeTasksRead)}, nil)
		e.Send(http.MethodPost, path, readOnly, body).ExpectError(t, http.StatusForbidden, string(domain.CodeInsufficientScope), "")
		restricted := e.KeyFor(e.Member.User, nil, []string{other})
		e.Send(http.MethodPost, path, restricted, body).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
		if got := createBatch(t, e, restricted, other, body); len(got) != 2 {
			t.Fatalf("a key restricted to the project creates in it: %v", got)
		}
		e.Send(http.MethodPost, path, e.Other.Key, body).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
		e.Send(http.MethodPost, "/v1/projects/prj_nope/tasks/batch", e.Member.Key, body).ExpectError(t, http.StatusNotFound, "resource_not_found", "")

		createBatch(t, e, e.Member.Key, prj, batchOf("mine", 3))
		if total, _ := projectCounts(t, e, prj); total != 3 {
			t.Fatalf("task_count %d after refusals and one batch of 3", total)
		}
		theirs := e.Get("/v1/tasks", e.Other.Key)
		theirs.ExpectStatus(t, http.StatusOK)
		if n := len(theirs.JSON["data"].([]any)); n != 0 {
			t.Fatalf("another workspace lists %d of our tasks", n)
		}
		if logged := listAll(t, e, e.Other.Key, url.Values{"type": {"task.created"}}); len(logged) != 0 {
			t.Fatalf("another workspace sees %d of our events", len(logged))
		}
	})
}

// A replay with the same Idempotency-Key answers the first answer and
// creates nothing more; the key with another body is a conflict.
func TestCreateTasksInBulkIsIdempotent(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "IDEM")
		path := "/v1/projects/" + prj + "/tasks/batch"
		body := func(prefix string) string {
			raw, err := json.Marshal(batchOf(prefix, 3))
			if err != nil {
				t.Fatal(err)
			}
			return string(raw)
		}
		first := idem(e, e.Member.Key, "import-1", path, body("i"))
		first.ExpectStatus(t, http.StatusCreated)
		again := idem(e, e.Member.Key, "import-1", path, body("i"))
		again.ExpectStatus(t, http.StatusCreated)
		if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
			t.Fatalf("the replay is not the first answer: %s / %s", again.Header, again.Body)
		}
		idem(e, e.Member.Key, "import-1", path, body("j")).ExpectError(t, http.StatusConflict, "idempotency_key_reused", "")
		if total, _ := projectCounts(t, e, prj); total != 3 {
			t.Fatalf("task_count %d after a replayed batch of 3", total)
		}
	})
}

// task_count and task_counts stay exact when batches and single creates
// write into one project at once.
func TestCreateTasksInBulkCountsStayExact(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "CNT")
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 5 {
					res := e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks/batch", e.Member.Key, map[string]any{"tasks": []any{
						map[string]any{"title": "a"}, map[string]any{"title": "b", "status": "done"}, map[string]any{"title": "c", "status": "in_progress"},
					}})
					if res.Status != http.StatusCreated {
						t.Errorf("batch %d.%d: %d %s", w, i, res.Status, res.Body)
					}
				}
			})
			wg.Go(func() {
				for range 5 {
					if res := e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Member.Key, map[string]any{"title": "s", "status": "done"}); res.Status != http.StatusCreated {
						t.Errorf("single: %d %s", res.Status, res.Body)
					}
				}
			})
		}
		wg.Wait()
		total, by := projectCounts(t, e, prj)
		if total != 4*5*3+4*5 || by["open"] != 20 || by["done"] != 40 || by["in_progress"] != 20 {
			t.Fatalf("task_count %d, task_counts %v; want 80 of which open 20, done 40, in_progress 20", total, by)
		}
	})
}

// Each task of a batch owes each subscribed webhook its own delivery: 500
// tasks and 20 webhooks are 10,000 deliveries, more than one statement of
// either database may carry.
func TestCreateTasksInBulkOwesEveryWebhookADelivery(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "HOOK")
		var hooks []string
		for i := range 20 {
			events := []string{"task.created"}
			if i == 19 {
				events = []string{"task.deleted"} // not subscribed: owed nothing
			}
			hooks = append(hooks, newWebhook(t, e, fmt.Sprintf("https://93.184.215.14/h%d", i), events...).Str("id"))
		}
		many := createBatch(t, e, e.Member.Key, prj, batchOf("d", domain.MaxBatchItems))
		// Counted in the database: listing 10,000 deliveries a page of 100
		// at a time through the API would only time the listing, which
		// the webhook tests cover.
		for i, hook := range hooks {
			var got struct{ Deliveries, Events, Created int64 }
			if err := db.Gorm().Raw(`SELECT count(*) AS deliveries, count(DISTINCT d.event_id) AS events,
				coalesce(sum(CASE WHEN e.type = 'task.created' THEN 1 ELSE 0 END), 0) AS created
				FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.webhook_id = ?`, hook).Scan(&got).Error; err != nil {
				t.Fatal(err)
			}
			want := int64(len(many))
			if i == 19 {
				want = 0
			}
			if got.Deliveries != want || got.Events != want || got.Created != want {
				t.Fatalf("webhook %d: %d deliveries of %d events (%d task.created), want %d of as many", i, got.Deliveries, got.Events, got.Created, want)
			}
		}
	})
}
