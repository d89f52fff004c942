package graph_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

// page is one page of a connection as a client sees it.
type page struct {
	ids         []string
	cursors     []string
	hasNext     bool
	endCursor   any
	startCursor any
}

func readPage(t *testing.T, conn any) page {
	t.Helper()
	var p page
	nodes, edges := list(conn, "nodes"), list(conn, "edges")
	if len(nodes) != len(edges) {
		t.Fatalf("nodes and edges differ: %v", conn)
	}
	for i, n := range nodes {
		id := mustStr(t, n, "id")
		if str(edges[i], "node", "id") != id {
			t.Fatalf("edge %d is not node %d: %v", i, i, conn)
		}
		p.ids = append(p.ids, id)
		p.cursors = append(p.cursors, mustStr(t, edges[i], "cursor"))
	}
	p.hasNext, _ = get(conn, "pageInfo", "hasNextPage").(bool)
	p.endCursor = get(conn, "pageInfo", "endCursor")
	p.startCursor = get(conn, "pageInfo", "startCursor")
	if get(conn, "pageInfo", "hasPreviousPage") != false {
		t.Fatalf("hasPreviousPage must be false: %v", conn)
	}
	if len(p.ids) > 0 && (p.endCursor != p.cursors[len(p.cursors)-1] || p.startCursor != p.cursors[0]) {
		t.Fatalf("start/end cursors are not the first/last edges': %v", conn)
	}
	if len(p.ids) == 0 && (p.endCursor != nil || p.startCursor != nil) {
		t.Fatalf("an empty page has null cursors: %v", conn)
	}
	return p
}

const connFields = `edges { cursor node { id } } nodes { id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }`

func seedProjects(t *testing.T, e *apitest.Env, n int) []string {
	t.Helper()
	member := domain.Actor{UserID: e.Member.User.ID, WorkspaceID: e.Workspace.ID, Role: domain.RoleMember}
	ids := make([]string, n)
	for i := range n {
		e.Clock.Advance(time.Millisecond)
		p, err := e.App.Projects.Create(context.Background(), member, domain.ProjectFields{Name: domain.Set(fmt.Sprint(i)), Key: domain.Set(fmt.Sprintf("K%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = p.ID
	}
	return ids
}

// 45 projects come as 20, 20 and 5, each exactly once, oldest first; each
// endCursor is REST's next_cursor for the same page, and the two APIs accept
// each other's cursors.
func TestProjectsPagination(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		want := seedProjects(t, e, 45)
		const q = `query($after: String) { projects(after: $after) { ` + connFields + ` } }`
		var got []string
		var sizes []int
		var after any
		restCursor := ""
		for range 10 {
			p := readPage(t, get(gql(t, e, e.Guest.Key, q, map[string]any{"after": after}).ok(t), "projects"))
			got = append(got, p.ids...)
			sizes = append(sizes, len(p.ids))

			path := "/v1/projects"
			if restCursor != "" {
				path += "?cursor=" + url.QueryEscape(restCursor)
			}
			rest := e.Get(path, e.Guest.Key)
			pagination, _ := rest.JSON["pagination"].(map[string]any)
			if p.hasNext != pagination["has_more"] || (p.hasNext && p.endCursor != pagination["next_cursor"]) {
				t.Fatalf("page %d: GraphQL hasNext=%v endCursor=%v, REST %s", len(sizes), p.hasNext, p.endCursor, rest.Body)
			}
			if !p.hasNext {
				break
			}
			after = p.endCursor
			restCursor, _ = pagination["next_cursor"].(string)
		}
		if fmt.Sprint(sizes) != "[20 20 5]" || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("pages %v; got %v, want %v", sizes, got, want)
		}

		// Any edge's cursor continues after that edge, and a REST cursor is
		// accepted as after.
		first := readPage(t, get(gql(t, e, e.Guest.Key, `{ projects(first: 5) { `+connFields+` } }`, nil).ok(t), "projects"))
		next := readPage(t, get(gql(t, e, e.Guest.Key, q, map[string]any{"after": first.cursors[2]}).ok(t), "projects"))
		if next.ids[0] != want[3] {
			t.Fatalf("after edge 2 should start at item 3: %v", next.ids)
		}
		rest := e.Get("/v1/projects?limit=40", e.Guest.Key)
		pagination, _ := rest.JSON["pagination"].(map[string]any)
		last := readPage(t, get(gql(t, e, e.Guest.Key, q, map[string]any{"after": pagination["next_cursor"]}).ok(t), "projects"))
		if fmt.Sprint(last.ids) != fmt.Sprint(want[40:]) || last.hasNext {
			t.Fatalf("after REST cursor: %v", last.ids)
		}
		// The endCursor of the last page gives an empty page.
		empty := readPage(t, get(gql(t, e, e.Guest.Key, q, map[string]any{"after": last.endCursor}).ok(t), "projects"))
		if len(empty.ids) != 0 || empty.hasNext {
			t.Fatalf("after the last item: %v", empty)
		}
	})
}

func TestConnectionArguments(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := seedProjects(t, e, 3)[0]
		for _, first := range []int{0, -1, 101} {
			for _, q := range []string{
				`query($n: Int) { users(first: $n) { nodes { id } } }`,
				`query($n: Int) { projects(first: $n) { nodes { id } } }`,
				`query($n: Int, $p: ID!) { project(id: $p) { tasks(first: $n) { nodes { id } } } }`,
			} {
				gql(t, e, e.Guest.Key, q, map[string]any{"n": first, "p": prj}).expectError(t, "validation_failed", "first")
			}
		}
		// first: 100 and an explicit null (the default) are fine.
		gql(t, e, e.Guest.Key, `{ users(first: 100) { nodes { id } } projects(first: null) { nodes { id } } }`, nil).ok(t)

		users := readPage(t, get(gql(t, e, e.Guest.Key, `{ users(first: 2) { `+connFields+` } }`, nil).ok(t), "users"))
		projects := readPage(t, get(gql(t, e, e.Guest.Key, `{ projects(first: 2) { `+connFields+` } }`, nil).ok(t), "projects"))
		for _, c := range []struct{ query, after string }{
			{`query($a: String) { projects(after: $a) { nodes { id } } }`, "garbage"},
			{`query($a: String) { projects(after: $a) { nodes { id } } }`, users.cursors[0]},          // another list's cursor
			{`query($a: String) { users(after: $a) { nodes { id } } }`, projects.cursors[0]},          // another list's cursor
			{`query($a: String) { projects(after: $a) { nodes { id } } }`, projects.cursors[0] + "x"}, // tampered
		} {
			gql(t, e, e.Guest.Key, c.query, map[string]any{"a": c.after}).expectError(t, "validation_failed", "after")
		}
		// An empty after is the first page, as an empty cursor is over REST.
		if p := readPage(t, get(gql(t, e, e.Guest.Key, `{ projects(after: "") { `+connFields+` } }`, nil).ok(t), "projects")); len(p.ids) != 3 {
			t.Fatalf("after \"\": %v", p.ids)
		}
		// Another workspace's cursor of the same list is refused too.
		other := readPage(t, get(gql(t, e, e.Other.Key, `{ users(first: 1) { `+connFields+` } }`, nil).ok(t), "users"))
		gql(t, e, e.Guest.Key, `query($a: String) { users(after: $a) { nodes { id } } }`, map[string]any{"a": other.cursors[0]}).
			expectError(t, "validation_failed", "after")
	})
}

// Project.tasks pages with its filters, each filter with its own cursors.
func TestProjectTasksPagination(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "PAG")
		var all, guests, doneGuest []string
		for i := range 12 {
			in := map[string]any{"title": fmt.Sprint(i)}
			if i%2 == 0 {
				in["assigneeId"] = e.Guest.User.ID
			}
			if i%3 == 0 {
				in["status"] = "DONE"
			}
			e.Clock.Advance(time.Millisecond)
			id := createTask(t, e, prj, in)
			all = append(all, id)
			if i%2 == 0 {
				guests = append(guests, id)
				if i%3 == 0 {
					doneGuest = append(doneGuest, id)
				}
			}
		}
		const q = `query($p: ID!, $n: Int, $a: String, $s: TaskStatus, $u: ID) {
			project(id: $p) { tasks(first: $n, after: $a, status: $s, assigneeId: $u) { ` + connFields + ` } } }`
		walk := func(vars map[string]any) (ids []string, cursors []string) {
			var after any
			for range 20 {
				vars["a"], vars["p"], vars["n"] = after, prj, 5
				p := readPage(t, get(gql(t, e, e.Guest.Key, q, vars).ok(t), "project", "tasks"))
				ids, cursors = append(ids, p.ids...), append(cursors, p.cursors...)
				if !p.hasNext {
					return ids, cursors
				}
				after = p.endCursor
			}
			t.Fatal("no end")
			return nil, nil
		}
		gotAll, allCursors := walk(map[string]any{})
		gotGuests, _ := walk(map[string]any{"u": e.Guest.User.ID})
		gotDoneGuest, _ := walk(map[string]any{"u": e.Guest.User.ID, "s": "DONE"})
		if fmt.Sprint(gotAll) != fmt.Sprint(all) || fmt.Sprint(gotGuests) != fmt.Sprint(guests) || fmt.Sprint(gotDoneGuest) != fmt.Sprint(doneGuest) {
			t.Fatalf("filters: %v %v %v", gotAll, gotGuests, gotDoneGuest)
		}
		// A cursor of one filter is refused by another.
		gql(t, e, e.Guest.Key, q, map[string]any{"p": prj, "a": allCursors[0], "s": "OPEN"}).expectError(t, "validation_failed", "after")
		// The cursors are REST's: the REST list continues after a GraphQL cursor.
		rest := e.Get("/v1/projects/"+prj+"/tasks?limit=100&cursor="+url.QueryEscape(allCursors[9]), e.Guest.Key)
		rest.ExpectStatus(t, 200)
		if data, _ := rest.JSON["data"].([]any); len(data) != 2 {
			t.Fatalf("REST after GraphQL cursor: %s", rest.Body)
		}
	})
}
