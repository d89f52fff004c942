// Command downstream uses the Worktrack Go client as an integration
// would: WORKTRACK_URL and WORKTRACK_KEY (an admin's) name the server. It
// prints "downstream: ok" when every step did what the API documents. Its
// test (downstream_test.go) runs the same steps against a Worktrack that
// worktracktest starts.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/oapi-codegen/nullable"

	"github.com/worktrack/worktrack/client"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, client.New(os.Getenv("WORKTRACK_URL"), os.Getenv("WORKTRACK_KEY"), client.WithUserAgent("downstream/1"))); err != nil {
		log.Fatalf("downstream: %v", err)
	}
	fmt.Println("downstream: ok")
}

func run(ctx context.Context, c *client.Client) error {
	me, err := c.Users.Me(ctx)
	if err != nil {
		return fmt.Errorf("me: %w", err)
	}
	key := fmt.Sprintf("D%d", time.Now().UnixNano()%100000)
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Downstream", Key: key})
	if err != nil {
		return fmt.Errorf("create project: %w", err)
	}
	// The same create twice with one idempotency key creates once.
	once := client.WithIdempotencyKey(ctx, "downstream-"+key)
	a, err := c.Tasks.Create(once, p.ID, client.TaskCreate{Title: "Write the announcement", AssigneeID: nullable.NewNullableWithValue(me.ID)})
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	b, err := c.Tasks.Create(once, p.ID, client.TaskCreate{Title: "Write the announcement", AssigneeID: nullable.NewNullableWithValue(me.ID)})
	if err != nil || b.ID != a.ID {
		return fmt.Errorf("the same create again: %v, %w", b, err)
	}
	if _, err := c.Tasks.CreateMany(ctx, p.ID, []client.TaskCreate{{Title: "Book the hall"}, {Title: "Print posters"}}); err != nil {
		return fmt.Errorf("create many: %w", err)
	}
	if _, err := c.Tasks.Update(ctx, a.ID, client.TaskUpdate{Status: client.Ptr(client.TaskStatusDone), AssigneeID: nullable.NewNullNullable[string]()}); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	var titles []string
	for t, err := range c.Tasks.List(ctx, client.TaskListParams{ListParams: client.ListParams{PageSize: 1}, ProjectIDs: []string{p.ID}, Statuses: []client.TaskStatus{client.TaskStatusOpen}}) {
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		titles = append(titles, t.Title)
	}
	if len(titles) != 2 || titles[0] != "Book the hall" {
		return fmt.Errorf("open tasks %v, want the two of the bulk create", titles)
	}
	counts, err := c.Tasks.Count(ctx, client.TaskCountParams{GroupBy: "status", TaskListParams: client.TaskListParams{ProjectIDs: []string{p.ID}}})
	if err != nil || counts.Total != 3 {
		return fmt.Errorf("count: %+v %w", counts, err)
	}
	if err := c.Tasks.Delete(ctx, a.ID); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	_, err = c.Tasks.Get(ctx, a.ID)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Code != "resource_not_found" || apiErr.RequestID == "" {
		return fmt.Errorf("get a deleted task: %w", err)
	}
	events := 0
	for e, err := range c.Events.List(ctx, client.EventListParams{ProjectID: p.ID}) {
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		if e.Type == client.EventTypeTaskDeleted {
			events++
		}
	}
	if events != 1 {
		return fmt.Errorf("%d task.deleted events, want 1", events)
	}
	return nil
}
