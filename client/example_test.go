package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/oapi-codegen/nullable"

	"github.com/worktrack/worktrack/client"
)

// serverURL and adminKey name the Worktrack these examples run against
// (main_test.go starts one); in your code they are your server's address
// and your key, e.g. os.Getenv("WORKTRACK_KEY").

func ExampleNew() {
	c := client.New(serverURL, adminKey, client.WithUserAgent("launch-planner/2.1"))
	me, err := c.Users.Me(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(me.Role)
	// Output: admin
}

func ExampleProjectsService_Create() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Launch", Key: "LAUNCH"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Key, p.Name, p.TaskCount)
	// Output: LAUNCH Launch 0
}

func ExampleTasksService_Create() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Docs", Key: "DOCS"})
	if err != nil {
		log.Fatal(err)
	}
	me, err := c.Users.Me(ctx)
	if err != nil {
		log.Fatal(err)
	}
	t, err := c.Tasks.Create(ctx, p.ID, client.TaskCreate{
		Title:      "Write the announcement",
		Status:     client.Ptr(client.TaskCreateStatusInProgress),
		AssigneeID: nullable.NewNullableWithValue(me.ID),
	})
	if err != nil {
		log.Fatal(err)
	}
	assignee, _ := t.AssigneeID.Get()
	fmt.Println(t.Title, t.Status, assignee == me.ID)
	// Output: Write the announcement in_progress true
}

// A merge patch: what is set changes, a null clears a field, what is
// absent is left as it is.
func ExampleTasksService_Update() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Patch", Key: "PATCH"})
	if err != nil {
		log.Fatal(err)
	}
	t, err := c.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "Book the hall", DueAt: nullable.NewNullableWithValue(time.Now().Add(24 * time.Hour))})
	if err != nil {
		log.Fatal(err)
	}
	t, err = c.Tasks.Update(ctx, t.ID, client.TaskUpdate{
		Status: client.Ptr(client.TaskStatusDone),
		DueAt:  nullable.NewNullNullable[time.Time](),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Title, t.Status, t.DueAt.IsNull())
	// Output: Book the hall done true
}

// An import: up to 500 tasks in one request, all or nothing.
func ExampleTasksService_CreateMany() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Import", Key: "IMPORT"})
	if err != nil {
		log.Fatal(err)
	}
	tasks, err := c.Tasks.CreateMany(ctx, p.ID, []client.TaskCreate{{Title: "Migrate billing"}, {Title: "Review the import"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(tasks), tasks[0].Title, tasks[1].Title)
	// Output: 2 Migrate billing Review the import
}

// Lists are iterators over every page: the client asks for the next page
// when the loop needs it.
func ExampleTasksService_List() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Pages", Key: "PAGES"})
	if err != nil {
		log.Fatal(err)
	}
	for _, title := range []string{"one", "two", "three"} {
		if _, err := c.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: title}); err != nil {
			log.Fatal(err)
		}
	}
	params := client.TaskListParams{ListParams: client.ListParams{PageSize: 2}, ProjectIDs: []string{p.ID}}
	for t, err := range c.Tasks.List(ctx, params) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(t.Title)
	}
	// Output:
	// one
	// two
	// three
}

// Resuming the event log: the events after the last one processed, across
// as many pages as wait.
func ExampleEventsService_List() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Log", Key: "LOG"})
	if err != nil {
		log.Fatal(err)
	}
	var last string // the id of the last event processed, kept by your program
	for e, err := range c.Events.List(ctx, client.EventListParams{ProjectID: p.ID}) {
		if err != nil {
			log.Fatal(err)
		}
		last = e.ID
	}
	if _, err := c.Tasks.CreateMany(ctx, p.ID, []client.TaskCreate{{Title: "a"}, {Title: "b"}, {Title: "c"}}); err != nil {
		log.Fatal(err)
	}
	params := client.EventListParams{ListParams: client.ListParams{PageSize: 1}, ProjectID: p.ID, StartingAfter: last}
	for e, err := range c.Events.List(ctx, params) {
		if err != nil {
			log.Fatal(err)
		}
		t, err := e.Task()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Type, t.Title)
	}
	// Output:
	// task.created a
	// task.created b
	// task.created c
}

// Follow keeps reading the log as changes commit, through outages, until
// its context ends.
func ExampleEventsService_Follow() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := client.New(serverURL, adminKey)
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Follow", Key: "FOLLOW"})
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		for _, title := range []string{"first", "second"} {
			if _, err := c.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: title}); err != nil {
				log.Print(err)
			}
		}
	}()
	seen := 0
	for e, err := range c.Events.Follow(ctx, client.EventListParams{ProjectID: p.ID, Type: client.EventTypeTaskCreated}, 100*time.Millisecond) {
		if err != nil {
			log.Fatal(err)
		}
		t, _ := e.Task()
		fmt.Println(t.Title)
		if seen++; seen == 2 {
			cancel() // or break
		}
	}
	// Output:
	// first
	// second
}

// Every error the API answers is a *client.Error.
func ExampleError() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	_, err := c.Tasks.Get(ctx, "tsk_doesnotexist")
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Code == client.CodeResourceNotFound {
		fmt.Println(apiErr.StatusCode, apiErr.Code, apiErr.RequestID != "")
	}
	// Output: 404 resource_not_found true
}

// The same create sent twice with one key (a retry after a lost answer,
// even from another process) creates once.
func ExampleWithIdempotencyKey() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Once", Key: "ONCE"})
	if err != nil {
		log.Fatal(err)
	}
	keyed := client.WithIdempotencyKey(ctx, "import-2026-12-06-row-17")
	a, err := c.Tasks.Create(keyed, p.ID, client.TaskCreate{Title: "Row 17"})
	if err != nil {
		log.Fatal(err)
	}
	var res client.Response
	b, err := c.Tasks.Create(client.CaptureResponse(keyed, &res), p.ID, client.TaskCreate{Title: "Row 17"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.ID == b.ID, res.Replayed)
	// Output: true true
}

// CaptureResponse gives what an answer said beside its body: its request
// id, the key's rate-limit window.
func ExampleCaptureResponse() {
	c := client.New(serverURL, adminKey)
	var res client.Response
	if _, err := c.Users.Me(client.CaptureResponse(context.Background(), &res)); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.StatusCode, res.RequestID != "", res.RateLimit.Limit, res.RateLimit.Remaining < res.RateLimit.Limit)
	// Output: 200 true 600 true
}

// Many callers sharing a small rate limit: each retries 429s, after the
// server's Retry-After spread apart, until its own deadline.
func ExampleWithRetryUntilDeadline() {
	c := client.New(serverURL, adminKey, client.WithRetryUntilDeadline())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Patient", Key: "PATIENT"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Key)
	// Output: PATIENT
}

// The audit log: who did what to a key, newest first (admins, audit:read).
func ExampleAuditService_List() {
	ctx := context.Background()
	c := client.New(serverURL, adminKey)
	k, err := c.APIKeys.Create(ctx, client.APIKeyCreate{Name: "laptop"})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.APIKeys.Revoke(ctx, k.ID); err != nil {
		log.Fatal(err)
	}
	for e, err := range c.Audit.List(ctx, client.AuditListParams{TargetID: k.ID}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Action, e.Actor.Type, e.Target.ID == k.ID)
	}
	// Output:
	// api_key.revoked api_key true
	// api_key.created api_key true
}
