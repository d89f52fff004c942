package worktracktest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/client/worktracktest"
)

// A test of your own integration starts Worktrack, drives it with the
// client (or with your code, given wt.URL and wt.AdminKey), and terminates
// it. In a test, call t.Fatal instead of log.Fatal, and register
// Terminate with t.Cleanup.
func ExampleRun() {
	ctx := context.Background()
	wt, err := worktracktest.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = wt.Terminate(ctx) }()

	c := wt.Client()
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Launch", Key: "LCH"})
	if err != nil {
		log.Fatal(err)
	}
	t, err := c.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "Write the announcement"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Title, t.Status)
}
