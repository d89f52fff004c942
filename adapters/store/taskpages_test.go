package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// FindTaskPages answers each filter exactly as FindTasks does, in one
// statement, whatever the mix of projects, filters, positions and limits.
func TestFindTaskPagesIsFindTasksBatched(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		u := newUser(t, db, ws, "a@x.test", base)
		p1, p2, empty := newProject(t, db, ws, "PA", base), newProject(t, db, ws, "PB", base), newProject(t, db, ws, "PC", base)
		foreign := newProject(t, db, other, "PF", base)
		for i := range 7 {
			in := domain.TaskFields{Title: domain.Set("T"), Status: domain.Set(domain.StatusOpen)}
			if i%2 == 0 {
				in.AssigneeID, in.Status = domain.Set(u.ID), domain.Set(domain.StatusDone)
			}
			at := base.Add(time.Duration(i%3) * time.Second) // ties on created_at, broken by id
			newTask(t, db, p1, in, at)
			newTask(t, db, p2, in, at)
		}
		newTask(t, db, foreign, domain.TaskFields{Title: domain.Set("F")}, base)

		done := domain.StatusDone
		firstTwo, err := db.Tasks().FindTasks(ctx, ports.TaskFilter{WorkspaceID: ws.ID, ProjectIDs: []string{p1.ID}, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		after := domain.Task.Position(firstTwo[1])
		filters := []ports.TaskFilter{
			{WorkspaceID: ws.ID, ProjectIDs: []string{p1.ID}, Limit: 3},
			{WorkspaceID: ws.ID, ProjectIDs: []string{p2.ID}, Limit: 100},
			{WorkspaceID: ws.ID, ProjectIDs: []string{p1.ID}, Statuses: []domain.Status{done}, AssigneeIDs: []string{u.ID}, Limit: 2},
			{WorkspaceID: ws.ID, ProjectIDs: []string{p1.ID}, After: &after, Limit: 4},
			{WorkspaceID: ws.ID, ProjectIDs: []string{empty.ID}, Limit: 5},
			{WorkspaceID: ws.ID, ProjectIDs: []string{foreign.ID}, Limit: 5}, // another workspace's project: nothing
			{WorkspaceID: ws.ID, ProjectIDs: []string{p1.ID}, Limit: 3},      // the same filter twice
		}
		counter := storetest.CountStatements(db)
		got, err := db.Tasks().FindTaskPages(ctx, filters)
		if err != nil {
			t.Fatal(err)
		}
		if counter.N() != 1 {
			t.Fatalf("want one statement, got %d: %v", counter.N(), counter.Statements())
		}
		if len(got) != len(filters) {
			t.Fatalf("want %d results, got %d", len(filters), len(got))
		}
		for i, f := range filters {
			want, err := db.Tasks().FindTasks(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, fmt.Sprintf("filter %d", i), got[i], want)
		}
		if len(got[0]) != 3 || len(got[1]) != 7 || len(got[2]) != 2 || len(got[3]) != 4 || len(got[4]) != 0 || len(got[5]) != 0 {
			t.Fatalf("sizes: %d %d %d %d %d %d", len(got[0]), len(got[1]), len(got[2]), len(got[3]), len(got[4]), len(got[5]))
		}
		if got[4] == nil {
			t.Fatal("an empty page is [], not nil")
		}
		if none, err := db.Tasks().FindTaskPages(ctx, nil); err != nil || len(none) != 0 {
			t.Fatalf("no filters: %v %v", none, err)
		}
	})
}

func TestNumberedPlaceholders(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 1":                           "SELECT 1",
		"a = ? AND b = ?":                    "a = $1 AND b = $2",
		"(c, i) > (?, ?) ORDER BY c LIMIT ?": "(c, i) > ($1, $2) ORDER BY c LIMIT $3",
		strings.Repeat("?,", 11) + "?":       "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12",
	} {
		if got := store.Numbered(in); got != want {
			t.Errorf("Numbered(%q) = %q; want %q", in, got, want)
		}
	}
}
