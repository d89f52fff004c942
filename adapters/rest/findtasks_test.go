package rest_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

// findFixture: two projects of Acme with tasks made to tell every filter
// apart, and a task of Globex that matches them all.
type findFixture struct {
	p, q                 string
	mine, theirs, nobody string // task ids: assigned to Member, to Admin, to no one
	announce             string // "Write the announcement", unassigned
}

func newFindFixture(t *testing.T, e *apitest.Env) findFixture {
	t.Helper()
	f := findFixture{p: newProject(t, e, "FIND"), q: newProject(t, e, "SEEK")}
	task := func(prj string, body map[string]any) string {
		e.Clock.Advance(1000)
		return newTask(t, e, prj, body).Str("id")
	}
	f.mine = task(f.p, map[string]any{"title": "Fix the login", "assignee_id": e.Member.User.ID, "status": "in_progress", "due_at": "2026-04-01T10:00:00Z"})
	f.theirs = task(f.q, map[string]any{"title": "Review budget", "assignee_id": e.Admin.User.ID, "due_at": "2026-04-02T10:00:00Z"})
	f.nobody = task(f.q, map[string]any{"title": "Ship release", "status": "done"})
	f.announce = task(f.p, map[string]any{"title": "Write the announcement", "due_at": "2026-03-31T10:00:00Z"})
	e.Clock.Advance(1000)
	globex := e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "G", "key": "GLX"}).Str("id")
	e.Send(http.MethodPost, "/v1/projects/"+globex+"/tasks", e.Other.Key,
		map[string]any{"title": "Write the announcement", "due_at": "2026-04-01T10:00:00Z"}).ExpectStatus(t, 201)
	return f
}

// ids lists the ids of a list answer's tasks, in order.
func ids(t *testing.T, res *apitest.Response) []string {
	t.Helper()
	res.ExpectStatus(t, http.StatusOK)
	var out []string
	for _, it := range res.JSON["data"].([]any) {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

func TestFindTasksAcrossProjects(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		f := newFindFixture(t, e)
		key := e.Member.Key
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"", []string{f.mine, f.theirs, f.nobody, f.announce}},
			{"project_id=" + f.q, []string{f.theirs, f.nobody}},
			{"project_id=" + f.q + "," + f.p + "&sort=-created_at", []string{f.announce, f.nobody, f.theirs, f.mine}},
			{"status=open,in_progress", []string{f.mine, f.theirs, f.announce}},
			{"assignee_id=me", []string{f.mine}},
			{"assignee_id=none", []string{f.nobody, f.announce}},
			{"assignee_id=me,none", []string{f.mine, f.nobody, f.announce}},
			{"assignee_id=" + e.Admin.User.ID + ",me", []string{f.mine, f.theirs}},
			{"due_after=2026-04-01T10:00:00Z", []string{f.mine, f.theirs}},                              // inclusive
			{"due_before=2026-04-01T10:00:00Z", []string{f.announce}},                                   // exclusive
			{"due_after=2026-04-01T12:00:00%2B02:00&due_before=2026-04-02T10:00:00Z", []string{f.mine}}, // offsets read
			{"updated_after=" + url.QueryEscape("2026-03-01T09:00:00.000005Z"), []string{f.theirs, f.nobody, f.announce}},
			{"q=wri+ANN", []string{f.announce}},
			{"q=" + url.QueryEscape("log"), []string{f.mine}},
			{"q=rite", nil}, // a word's inside is not a prefix
			// Repeats and words that start another word ask nothing more.
			{"q=" + strings.Repeat("wri+", 40) + "ANN", []string{f.announce}},
			{"q=wri+write+WRITE+the+announcement+ann+a", []string{f.announce}},
			{"sort=due_at", []string{f.announce, f.mine, f.theirs, f.nobody}}, // undated last
			{"sort=-due_at", []string{f.theirs, f.mine, f.announce, f.nobody}},
			{"sort=-updated_at&status=open", []string{f.announce, f.theirs}},
			{"assignee_id=me,none&status=open,in_progress&sort=due_at", []string{f.announce, f.mine}},
		} {
			got := ids(t, e.Get("/v1/tasks?"+tc.query, key))
			if !slices.Equal(got, tc.want) {
				t.Errorf("GET /v1/tasks?%s = %v, want %v", tc.query, got, tc.want)
			}
		}
		// A project's list takes the same filters.
		if got := ids(t, e.Get("/v1/projects/"+f.p+"/tasks?q=wri&sort=-due_at", key)); !slices.Equal(got, []string{f.announce}) {
			t.Errorf("project list with q: %v", got)
		}
		if got := ids(t, e.Get("/v1/projects/"+f.q+"/tasks?assignee_id=none,"+e.Admin.User.ID+"&sort=-due_at", key)); !slices.Equal(got, []string{f.theirs, f.nobody}) {
			t.Errorf("project list with assignees: %v", got)
		}
		// me is the key's user: the admin's key finds the admin's task.
		if got := ids(t, e.Get("/v1/tasks?assignee_id=me", e.Admin.Key)); !slices.Equal(got, []string{f.theirs}) {
			t.Errorf("admin's me: %v", got)
		}
		// Globex sees only its own task, whatever it asks.
		if got := ids(t, e.Get("/v1/tasks?q=wri+ann&project_id="+f.p, e.Other.Key)); len(got) != 0 {
			t.Errorf("Globex sees Acme's tasks: %v", got)
		}
		if got := ids(t, e.Get("/v1/tasks", e.Other.Key)); len(got) != 1 {
			t.Errorf("Globex's list: %v", got)
		}
	})
}

// Walking a filtered, ordered list page by page returns the whole list
// once, in order, whatever the page size.
func TestFindTasksPagesThroughEveryOrder(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "PAGE")
		for i := range 13 {
			body := map[string]any{"title": fmt.Sprintf("Task %d", i)}
			if i%3 != 0 {
				body["due_at"] = fmt.Sprintf("2026-04-0%dT10:00:00Z", 1+i%4) // ties
			}
			if i%2 == 0 {
				e.Clock.Advance(1000) // created_at ties in pairs
			}
			newTask(t, e, prj, body)
		}
		for _, sort := range []string{"created_at", "-created_at", "updated_at", "-updated_at", "due_at", "-due_at"} {
			whole := ids(t, e.Get("/v1/tasks?limit=100&sort="+sort, e.Guest.Key))
			if len(whole) != 13 {
				t.Fatalf("%s: %d tasks", sort, len(whole))
			}
			for _, size := range []int{1, 4} {
				var got []string
				cursor := ""
				for range 20 {
					res := e.Get(fmt.Sprintf("/v1/tasks?sort=%s&limit=%d&cursor=%s", sort, size, cursor), e.Guest.Key)
					got = append(got, ids(t, res)...)
					next, _ := res.JSON["pagination"].(map[string]any)["next_cursor"].(string)
					if next == "" {
						break
					}
					cursor = next
				}
				if !slices.Equal(got, whole) {
					t.Errorf("%s by %d: %v, want %v", sort, size, got, whole)
				}
			}
		}
	})
}

func TestFindTasksRefusesBadParameters(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		f := newFindFixture(t, e)
		cursorOf := func(path string) string {
			res := e.Get(path, e.Member.Key)
			res.ExpectStatus(t, 200)
			return res.JSON["pagination"].(map[string]any)["next_cursor"].(string)
		}
		byDue := cursorOf("/v1/tasks?limit=1&sort=due_at&status=open,in_progress")
		fifty := strings.Repeat("open,", 50) + "open"
		for _, tc := range []struct{ path, param string }{
			{"/v1/tasks?colour=red", "colour"},
			{"/v1/tasks?status=open&status=done", "status"},
			{"/v1/tasks?status=bogus", "status"},
			{"/v1/tasks?status=open,", "status"},
			{"/v1/tasks?status=" + fifty, "status"},
			{"/v1/tasks?project_id=" + f.p + ",nope", "project_id"},
			{"/v1/tasks?assignee_id=someone", "assignee_id"},
			{"/v1/tasks?due_after=yesterday", "due_after"},
			{"/v1/tasks?due_before=2026-13-01T00:00:00Z", "due_before"},
			{"/v1/tasks?updated_after=", "updated_after"},
			{"/v1/tasks?q=", "q"},
			{"/v1/tasks?q=" + strings.Repeat("a", 201), "q"},
			{"/v1/tasks?q=%21%3F", "q"},
			{"/v1/tasks?q=a+b+c+d+e+f+g+h+i", "q"}, // 9 different words
			{"/v1/tasks/counts?group_by=status&q=a+b+c+d+e+f+g+h+i", "q"},
			{"/v1/tasks?sort=title", "sort"},
			{"/v1/tasks?limit=0", "limit"},
			{"/v1/projects/" + f.p + "/tasks?project_id=" + f.q, "project_id"},
			{"/v1/tasks/counts", "group_by"},
			{"/v1/tasks/counts?group_by=title", "group_by"},
			{"/v1/tasks/counts?group_by=status&sort=due_at", "sort"},
			{"/v1/tasks/counts?group_by=status&limit=5", "limit"},
			// A cursor belongs to its list, filters and order.
			{"/v1/tasks?sort=due_at&status=open&cursor=" + byDue, "cursor"},
			{"/v1/tasks?sort=-due_at&status=open,in_progress&cursor=" + byDue, "cursor"},
			{"/v1/tasks?status=open,in_progress&cursor=" + byDue, "cursor"},
			{"/v1/projects/" + f.p + "/tasks?sort=due_at&status=open,in_progress&cursor=" + byDue, "cursor"},
		} {
			e.Get(tc.path, e.Member.Key).ExpectError(t, 400, "validation_failed", tc.param)
		}
		// The same filters in another order and spelling are the same list.
		if got := ids(t, e.Get("/v1/tasks?limit=1&status=in_progress,open&sort=due_at&cursor="+byDue, e.Member.Key)); len(got) != 1 {
			t.Errorf("the cursor is refused by its own list written otherwise: %v", got)
		}
		// A cursor of a project's list issued before lists took more
		// filters (its list named by one status and one assignee) still
		// reads on.
		old := domain.EncodeCursor(fmt.Sprintf("tasks:%s:%s:status=*:assignee=*", e.Workspace.ID, f.p),
			domain.Position{At: e.Clock.Now().Add(-time.Hour), ID: "tsk_0"})
		if got := ids(t, e.Get("/v1/projects/"+f.p+"/tasks?cursor="+old, e.Member.Key)); len(got) != 2 {
			t.Errorf("an earlier cursor: %v", got)
		}
		// Another user's me is another list.
		e.Get("/v1/tasks?assignee_id=me,none&cursor="+cursorOf("/v1/tasks?limit=1&assignee_id=me,none"), e.Admin.Key).
			ExpectError(t, 400, "validation_failed", "cursor")
	})
}

func TestTaskCounts(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		f := newFindFixture(t, e)
		res := e.Get("/v1/tasks/counts?group_by=assignee_id", e.Guest.Key)
		res.ExpectStatus(t, 200)
		users := []string{e.Admin.User.ID, e.Member.User.ID}
		slices.Sort(users)
		want := fmt.Sprintf(`{"object":"task_counts","group_by":"assignee_id","total":4,"data":[{"key":null,"count":2},{"key":"%s","count":1},{"key":"%s","count":1}]}`+"\n", users[0], users[1])
		if string(res.Body) != want {
			t.Fatalf("counts:\n got %s\nwant %s", res.Body, want)
		}
		// Counts equal the length of the list the same filters keep, a
		// value given twice counted once.
		for _, filters := range []string{"", "status=open,in_progress", "status=open,open,done", "project_id=" + f.p + "," + f.p, "assignee_id=me,none", "q=wri", "due_after=2026-04-01T10:00:00Z", "project_id=" + f.q, "status=archived"} {
			list := len(ids(t, e.Get("/v1/tasks?limit=100&"+filters, e.Guest.Key)))
			for _, by := range []string{"status", "assignee_id", "project_id"} {
				c := e.Get("/v1/tasks/counts?group_by="+by+"&"+filters, e.Guest.Key)
				c.ExpectStatus(t, 200)
				sum := 0
				for _, g := range c.JSON["data"].([]any) {
					n := int(g.(map[string]any)["count"].(float64))
					if n == 0 {
						t.Errorf("%s by %s: an empty group %v", filters, by, g)
					}
					sum += n
				}
				if total := int(c.JSON["total"].(float64)); total != list || sum != list {
					t.Errorf("%s by %s: total %d, groups %d, list %d", filters, by, total, sum, list)
				}
			}
		}
		byStatus := e.Get("/v1/tasks/counts?group_by=status", e.Guest.Key)
		if got := string(byStatus.Body); !strings.Contains(got, `"data":[{"key":"done","count":1},{"key":"in_progress","count":1},{"key":"open","count":2}]`) {
			t.Errorf("by status: %s", got)
		}
		// Globex's counts hold Globex's task only.
		if got := e.Get("/v1/tasks/counts?group_by=status", e.Other.Key); !strings.Contains(string(got.Body), `"total":1,`) {
			t.Errorf("Globex's counts: %s", got.Body)
		}
	})
}

// A key restricted to projects finds and counts only their tasks.
func TestFindTasksWithARestrictedKey(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		f := newFindFixture(t, e)
		key := e.KeyFor(e.Member.User, nil, []string{f.p})
		if got := ids(t, e.Get("/v1/tasks", key)); !slices.Equal(got, []string{f.mine, f.announce}) {
			t.Errorf("restricted list: %v", got)
		}
		if got := ids(t, e.Get("/v1/tasks?project_id="+f.q, key)); len(got) != 0 {
			t.Errorf("restricted key reads another project: %v", got)
		}
		if got := ids(t, e.Get("/v1/tasks?project_id="+f.q+","+f.p+"&assignee_id=none", key)); !slices.Equal(got, []string{f.announce}) {
			t.Errorf("restricted key, two projects asked: %v", got)
		}
		res := e.Get("/v1/tasks/counts?group_by=project_id", key)
		if want := fmt.Sprintf(`"total":2,"data":[{"key":"%s","count":2}]`, f.p); !strings.Contains(string(res.Body), want) {
			t.Errorf("restricted counts: %s", res.Body)
		}
		if got := e.Get("/v1/tasks/counts?group_by=status&project_id="+f.q, key); !strings.Contains(string(got.Body), `"total":0,"data":[]`) {
			t.Errorf("restricted counts of another project: %s", got.Body)
		}
		e.Get("/v1/projects/"+f.q+"/tasks?q=review", key).ExpectError(t, 404, "resource_not_found", "")
		// Without tasks:read, nothing.
		noTasks := e.KeyFor(e.Member.User, []string{"projects:read"}, nil)
		e.Get("/v1/tasks", noTasks).ExpectError(t, 403, "insufficient_scope", "")
		e.Get("/v1/tasks/counts?group_by=status", noTasks).ExpectError(t, 403, "insufficient_scope", "")
	})
}

// task_counts stays exact under concurrent creations, status changes and
// deletions, and adds up to task_count.
func TestProjectTaskCountsUnderConcurrency(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "CNTS")
		var pre []string
		for range 20 {
			pre = append(pre, newTask(t, e, prj, map[string]any{"title": "pre"}).Str("id"))
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		send := func(method, path string, body any) {
			wg.Go(func() {
				<-start
				if res := e.Send(method, path, e.Member.Key, body); res.Status >= 300 {
					t.Errorf("%s %s: %d %s", method, path, res.Status, res.Body)
				}
			})
		}
		for i := range 20 {
			send(http.MethodPost, "/v1/projects/"+prj+"/tasks", map[string]any{"title": "new", "status": []string{"open", "in_progress", "done"}[i%3]})
		}
		for i, id := range pre {
			switch i % 4 {
			case 0:
				send(http.MethodDelete, "/v1/tasks/"+id, nil)
			case 1:
				send(http.MethodPatch, "/v1/tasks/"+id, map[string]any{"status": "done"})
			case 2:
				send(http.MethodPatch, "/v1/tasks/"+id, map[string]any{"status": "archived"})
			default:
				send(http.MethodPatch, "/v1/tasks/"+id, map[string]any{"title": "renamed"}) // no move
			}
		}
		close(start)
		wg.Wait()
		got := e.Get("/v1/projects/"+prj, e.Guest.Key)
		counts := got.JSON["task_counts"].(map[string]any)
		want := map[string]int{}
		for _, task := range e.Get("/v1/projects/"+prj+"/tasks?limit=100", e.Guest.Key).JSON["data"].([]any) {
			want[task.(map[string]any)["status"].(string)]++
		}
		total := 0
		for _, s := range []string{"open", "in_progress", "done", "archived"} {
			if int(counts[s].(float64)) != want[s] {
				t.Errorf("task_counts.%s = %v, want %d (%s)", s, counts[s], want[s], got.Body)
			}
			total += want[s]
		}
		if total != 35 || int(got.JSON["task_count"].(float64)) != total {
			t.Errorf("task_count %v, tasks %d, want 35", got.JSON["task_count"], total)
		}
	})
}

// Walking GET /v1/tasks by created_at, either way, while tasks are created
// and deleted across its projects returns each task that exists for the whole
// walk exactly once, and no task twice.
func TestFindTasksIsStableUnderWrites(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		projects := []string{newProject(t, e, "WA"), newProject(t, e, "WB"), newProject(t, e, "WC")}
		var doomed []string
		for i := range 30 {
			e.Clock.Advance(1000)
			id := newTask(t, e, projects[i%3], map[string]any{"title": fmt.Sprintf("t%d", i)}).Str("id")
			if i%5 == 2 {
				doomed = append(doomed, id)
			}
		}
		stable := ids(t, e.Get("/v1/tasks?limit=100", e.Guest.Key))
		for _, sort := range []string{"created_at", "-created_at"} {
			seen := map[string]int{}
			cursor, writes := "", 0
			for page := range 40 {
				res := e.Get("/v1/tasks?limit=4&sort="+sort+"&cursor="+cursor, e.Guest.Key)
				for _, id := range ids(t, res) {
					seen[id]++
				}
				// Between pages: a new task, in each project in turn, and a
				// deletion.
				e.Clock.Advance(1000)
				newTask(t, e, projects[page%3], map[string]any{"title": "meanwhile"})
				if writes < len(doomed) {
					e.Send(http.MethodDelete, "/v1/tasks/"+doomed[writes], e.Member.Key, nil).ExpectStatus(t, http.StatusNoContent)
					writes++
				}
				next, _ := res.JSON["pagination"].(map[string]any)["next_cursor"].(string)
				if next == "" {
					break
				}
				cursor = next
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("%s: task %s seen %d times", sort, id, n)
				}
			}
			for _, id := range stable {
				if !slices.Contains(doomed, id) && seen[id] != 1 {
					t.Errorf("%s: task %s, there for the whole walk, seen %d times", sort, id, seen[id])
				}
			}
			doomed = doomed[:0]
			stable = ids(t, e.Get("/v1/tasks?limit=100", e.Guest.Key))
		}
	})
}
