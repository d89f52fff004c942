package clienttest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

// Resuming the log with StartingAfter reads every page that waits: the
// first request carries starting_after, the next ones the cursor alone
// (the API refuses both together). Seven events after the one resumed
// from, three to a page, are three pages; List and Follow alike.
func TestEventsResumeAcrossPages(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := serve(t, db, apitest.Settings{})
		ctx := context.Background()
		p := must[*client.Project](t)(s.member.Projects.Create(ctx, client.ProjectCreate{Name: "Resume", Key: "RESUME"}))
		first := must[*client.Task](t)(s.member.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "before"}))
		var from string
		for e, err := range s.member.Events.List(ctx, client.EventListParams{}) {
			if err != nil {
				t.Fatal(err)
			}
			from = e.ID
		}
		var want []string
		for i := range 7 {
			tk := must[*client.Task](t)(s.member.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: fmt.Sprint("after ", i)}))
			want = append(want, tk.ID)
		}
		params := client.EventListParams{ListParams: client.ListParams{PageSize: 3}, StartingAfter: from}
		check := func(name string, got []client.Event) {
			t.Helper()
			if len(got) != len(want) {
				t.Fatalf("%s: %d events after %s, want %d", name, len(got), from, len(want))
			}
			for i, e := range got {
				task, err := e.Task()
				if err != nil || task.ID != want[i] || task.ID == first.ID {
					t.Fatalf("%s: event %d is of %v (%v), want %s", name, i, task, err, want[i])
				}
			}
		}
		check("List", collect(t, s.member.Events.List(ctx, params)))

		fctx, stop := context.WithCancel(ctx)
		defer stop()
		var followed []client.Event
		for e, err := range s.member.Events.Follow(fctx, params, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if followed = append(followed, e); len(followed) == len(want) {
				break
			}
		}
		check("Follow", followed)
	})
}
