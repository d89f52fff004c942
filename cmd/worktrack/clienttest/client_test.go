package clienttest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oapi-codegen/nullable"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// server is the real Worktrack handler (apitest's, over db) on a real
// listener, and clients of it for Acme's admin and member and Globex's
// admin.
type server struct {
	*apitest.Env
	URL                  string
	admin, member, other *client.Client
}

func serve(t *testing.T, db *store.DB, set apitest.Settings, opts ...apitest.Option) *server {
	t.Helper()
	e := apitest.NewWith(t, db, set, opts...)
	srv := httptest.NewServer(e.Edge)
	t.Cleanup(srv.Close)
	return &server{Env: e, URL: srv.URL,
		admin:  client.New(srv.URL, e.Admin.Key),
		member: client.New(srv.URL, e.Member.Key),
		other:  client.New(srv.URL, e.Other.Key)}
}

// apiError is err as a *client.Error, failing the test when it is not one
// of the status and code.
func apiError(t *testing.T, err error, status int, code string) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *client.Error %d %s", err, err, status, code)
	}
	if e.StatusCode != status || e.Code != code || e.RequestID == "" || e.Message == "" || e.Type == "" {
		t.Fatalf("error %+v, want %d %s with a type, message and request id", e, status, code)
	}
	return e
}

// expectError is apiError for a statement.
func expectError(t *testing.T, err error, status int, code string) {
	t.Helper()
	_ = apiError(t, err, status, code)
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// collect reads a whole list, failing the test on its error.
func collect[T any](t *testing.T, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// Every method of Projects and Tasks against a real server, lists across
// pages, and a second workspace that sees none of it.
func TestProjectsAndTasks(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := serve(t, db, apitest.Settings{})
		ctx := context.Background()
		c := s.member

		p := must[*client.Project](t)(c.Projects.Create(ctx, client.ProjectCreate{Name: "Launch", Key: "LCH"}))
		if p.Name != "Launch" || p.Key != "LCH" || p.TaskCount != 0 {
			t.Fatalf("created %+v", p)
		}
		if got := must[*client.Project](t)(c.Projects.Update(ctx, p.ID, client.ProjectUpdate{Name: client.Ptr("Launch v2")})); got.Name != "Launch v2" {
			t.Fatalf("renamed: %+v", got)
		}
		s.Clock.Advance(time.Second)
		q := must[*client.Project](t)(c.Projects.Create(ctx, client.ProjectCreate{Name: "Other", Key: "OTH"}))

		due := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
		first := must[*client.Task](t)(c.Tasks.Create(ctx, p.ID, client.TaskCreate{
			Title: "Write the announcement", AssigneeID: nullable.NewNullableWithValue(s.Env.Member.User.ID),
			DueAt: nullable.NewNullableWithValue(due)}))
		if first.ProjectID != p.ID || first.Status != client.TaskStatusOpen || first.AssigneeID.MustGet() != s.Env.Member.User.ID ||
			!first.DueAt.MustGet().Equal(due) {
			t.Fatalf("created %+v", first)
		}
		s.Clock.Advance(time.Second) // the server's clock stands still in tests
		batch := must[[]client.Task](t)(c.Tasks.CreateMany(ctx, p.ID, []client.TaskCreate{
			{Title: "Book the hall"}, {Title: "Print posters", Status: client.Ptr(client.TaskCreateStatusInProgress)},
			{Title: "Invite press"}, {Title: "Order cake"}}))
		if len(batch) != 4 || batch[0].Title != "Book the hall" || batch[1].Status != client.TaskStatusInProgress || batch[3].Title != "Order cake" {
			t.Fatalf("batch %+v", batch)
		}
		s.Clock.Advance(time.Second)
		must[*client.Task](t)(c.Tasks.Create(ctx, q.ID, client.TaskCreate{Title: "Elsewhere"}))

		got := must[*client.Task](t)(c.Tasks.Get(ctx, first.ID))
		if got.ID != first.ID || got.Title != first.Title {
			t.Fatalf("get %+v", got)
		}
		// An update changes what is set, and a null clears.
		upd := must[*client.Task](t)(c.Tasks.Update(ctx, first.ID, client.TaskUpdate{
			Status: client.Ptr(client.TaskStatusDone), AssigneeID: nullable.NewNullNullable[string]()}))
		if upd.Status != client.TaskStatusDone || !upd.AssigneeID.IsNull() || !upd.DueAt.MustGet().Equal(due) || upd.Title != first.Title {
			t.Fatalf("updated %+v", upd)
		}

		// Lists go across pages (two a page here) to the end, in order.
		var titles []string
		for task := range must2(t, c.Tasks.List(ctx, client.TaskListParams{ListParams: client.ListParams{PageSize: 2}, ProjectIDs: []string{p.ID}})) {
			titles = append(titles, task.Title)
		}
		want := []string{"Write the announcement", "Book the hall", "Print posters", "Invite press", "Order cake"}
		if !slices.Equal(titles, want) {
			t.Fatalf("list %v, want %v", titles, want)
		}
		// Filters, search and order.
		inProgress := collect(t, c.Tasks.List(ctx, client.TaskListParams{Statuses: []client.TaskStatus{client.TaskStatusInProgress, client.TaskStatusDone}, Sort: "-created_at"}))
		if len(inProgress) != 2 || inProgress[0].Title != "Print posters" || inProgress[1].Title != "Write the announcement" {
			t.Fatalf("by status, newest first: %+v", inProgress)
		}
		if found := collect(t, c.Tasks.List(ctx, client.TaskListParams{Query: "pos"})); len(found) != 1 || found[0].Title != "Print posters" {
			t.Fatalf("search: %+v", found)
		}
		if all := collect(t, c.Tasks.List(ctx, client.TaskListParams{ListParams: client.ListParams{PageSize: 1}})); len(all) != 6 {
			t.Fatalf("every task, one a page: %d, want 6", len(all))
		}
		// Stopping the iterator stops the requests: two items of one a
		// page are two requests.
		counted := &countingTransport{}
		cc := client.New(s.URL, s.Env.Member.Key, client.WithHTTPClient(&http.Client{Transport: counted}))
		n := 0
		for _, err := range cc.Tasks.List(ctx, client.TaskListParams{ListParams: client.ListParams{PageSize: 1}}) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 2 {
				break
			}
		}
		if got := counted.n.Load(); got != 2 {
			t.Fatalf("%d requests for two items of one a page, want 2", got)
		}

		counts := must[*client.TaskCounts](t)(c.Tasks.Count(ctx, client.TaskCountParams{GroupBy: "status",
			TaskListParams: client.TaskListParams{ProjectIDs: []string{p.ID}}}))
		if counts.Total != 5 {
			t.Fatalf("counts %+v", counts)
		}
		byStatus := map[string]int{}
		for _, g := range counts.Data {
			byStatus[g.Key.MustGet()] = g.Count
		}
		if byStatus["open"] != 3 || byStatus["in_progress"] != 1 || byStatus["done"] != 1 {
			t.Fatalf("counts by status %v", byStatus)
		}
		if pp := must[*client.Project](t)(c.Projects.Get(ctx, p.ID)); pp.TaskCount != 5 {
			t.Fatalf("project task_count %d, want 5", pp.TaskCount)
		}
		if ps := collect(t, c.Projects.List(ctx, client.ListParams{PageSize: 1})); len(ps) != 2 || ps[0].ID != p.ID || ps[1].ID != q.ID {
			t.Fatalf("projects %+v", ps)
		}

		// Globex sees none of it.
		_, err := s.other.Tasks.Get(ctx, first.ID)
		expectError(t, err, http.StatusNotFound, "resource_not_found")
		if ps := collect(t, s.other.Projects.List(ctx, client.ListParams{})); len(ps) != 0 {
			t.Fatalf("Globex lists Acme's projects: %+v", ps)
		}
		if ts := collect(t, s.other.Tasks.List(ctx, client.TaskListParams{})); len(ts) != 0 {
			t.Fatalf("Globex lists Acme's tasks: %+v", ts)
		}

		if err := c.Tasks.Delete(ctx, first.ID); err != nil {
			t.Fatal(err)
		}
		_, err = c.Tasks.Get(ctx, first.ID)
		expectError(t, err, http.StatusNotFound, "resource_not_found")
		if _, err := c.Tasks.Get(ctx, ""); err == nil {
			t.Fatal("an empty id must be refused before any request")
		}
	})
}

// countingTransport counts the requests it sends.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// must2 is a list that fails the test on its error, as a plain iterator.
func must2[T any](t *testing.T, seq func(func(T, error) bool)) func(func(T) bool) {
	return func(yield func(T) bool) {
		for v, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			if !yield(v) {
				return
			}
		}
	}
}
