package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// queryFixture is a workspace of tasks made to exercise every filter and
// order: ties on every sort key, undated tasks, boundaries exactly on the
// filters' instants, titles for word-prefix search, and another
// workspace's task that matches every filter and must never be seen.
type queryFixture struct {
	ws         domain.Workspace
	a, b       domain.User
	p, q, r    domain.Project
	all        []domain.Task
	t0         time.Time // the instant the filters' bounds are set on
	foreignTsk domain.Task
}

var queryTitles = []string{
	"Write the announcement", "Rewrite the docs", "write-up: Q3 plan", "Announce v2 launch",
	"Überprüfen der Zahlen", "fix login bug", "Login page redesign", "The writer's guide", "किताब पढ़ो",
}

func newQueryFixture(t *testing.T, db *store.DB) queryFixture {
	t.Helper()
	ctx := context.Background()
	f := queryFixture{ws: newWorkspace(t, db), t0: base.Add(10 * time.Hour)}
	f.a, f.b = newUser(t, db, f.ws, "a@x.test", base), newUser(t, db, f.ws, "b@x.test", base)
	f.p, f.q, f.r = newProject(t, db, f.ws, "QA", base), newProject(t, db, f.ws, "QB", base), newProject(t, db, f.ws, "QC", base)
	projects := []domain.Project{f.p, f.q, f.r}
	for i := range 48 {
		at := base.Add(time.Duration(i/3) * time.Hour) // three tasks share each created_at
		task := domain.Task{
			ID: domain.NewID(domain.PrefixTask), WorkspaceID: f.ws.ID, ProjectID: projects[i%3].ID,
			Title: queryTitles[i%len(queryTitles)], Status: domain.Statuses[i%4],
			CreatedAt: at, UpdatedAt: at.Add(time.Duration(i%5) * time.Hour),
		}
		switch i % 3 {
		case 0:
			task.AssigneeID = &f.a.ID
		case 1:
			task.AssigneeID = &f.b.ID
		}
		if i%4 != 3 { // a quarter undated; the others on 6 instants, t0 among them
			due := f.t0.Add(time.Duration(i%6-3) * time.Hour)
			task.DueAt = &due
		}
		if err := db.Tasks().CreateTasks(ctx, []domain.Task{task}); err != nil {
			t.Fatal(err)
		}
		f.all = append(f.all, task)
	}
	other := newWorkspace(t, db)
	op := newProject(t, db, other, "QA", base)
	due := f.t0
	f.foreignTsk = newTask(t, db, op, domain.TaskFields{Title: domain.Set("Write the announcement"), DueAt: domain.Set(due)}, f.t0)
	return f
}

// matches is the filter's rule written plainly: the oracle the store's SQL
// is checked against.
func matches(t domain.Task, f ports.TaskFilter) bool {
	if t.WorkspaceID != f.WorkspaceID || (f.ProjectIDs != nil && !slices.Contains(f.ProjectIDs, t.ProjectID)) {
		return false
	}
	if f.Statuses != nil && !slices.Contains(f.Statuses, t.Status) {
		return false
	}
	if f.AssigneeIDs != nil || f.Unassigned {
		ok := (t.AssigneeID == nil && f.Unassigned) || (t.AssigneeID != nil && slices.Contains(f.AssigneeIDs, *t.AssigneeID))
		if !ok {
			return false
		}
	}
	if f.DueAfter != nil && (t.DueAt == nil || t.DueAt.Before(*f.DueAfter)) {
		return false
	}
	if f.DueBefore != nil && (t.DueAt == nil || !t.DueAt.Before(*f.DueBefore)) {
		return false
	}
	if f.UpdatedAfter != nil && !t.UpdatedAt.After(*f.UpdatedAfter) {
		return false
	}
	titleWords := domain.SearchWords(t.Title)
	for _, w := range f.Words {
		if !slices.ContainsFunc(titleWords, func(tw string) bool { return strings.HasPrefix(tw, w) }) {
			return false
		}
	}
	return true
}

func (fx queryFixture) filters() map[string]ports.TaskFilter {
	ws := fx.ws.ID
	t0, later := fx.t0, fx.t0.Add(2*time.Hour)
	upd := base.Add(20 * time.Hour)
	return map[string]ports.TaskFilter{
		"everything":        {WorkspaceID: ws},
		"one project":       {WorkspaceID: ws, ProjectIDs: []string{fx.p.ID}},
		"two projects":      {WorkspaceID: ws, ProjectIDs: []string{fx.p.ID, fx.r.ID}},
		"statuses":          {WorkspaceID: ws, Statuses: []domain.Status{domain.StatusOpen, domain.StatusInProgress}},
		"one assignee":      {WorkspaceID: ws, AssigneeIDs: []string{fx.a.ID}},
		"unassigned":        {WorkspaceID: ws, Unassigned: true},
		"a or unassigned":   {WorkspaceID: ws, AssigneeIDs: []string{fx.a.ID}, Unassigned: true},
		"due after":         {WorkspaceID: ws, DueAfter: &t0},
		"due before":        {WorkspaceID: ws, DueBefore: &t0},
		"due window":        {WorkspaceID: ws, DueAfter: &t0, DueBefore: &later},
		"updated after":     {WorkspaceID: ws, UpdatedAfter: &upd},
		"word prefixes":     {WorkspaceID: ws, Words: []string{"wri", "ann"}},
		"one word":          {WorkspaceID: ws, Words: []string{"login"}},
		"accented":          {WorkspaceID: ws, Words: []string{"überp"}},
		"devanagari":        {WorkspaceID: ws, Words: domain.SearchWords("किताब")},
		"no such word":      {WorkspaceID: ws, Words: []string{"zebra"}},
		"mine, open, dated": {WorkspaceID: ws, AssigneeIDs: []string{fx.b.ID}, Statuses: []domain.Status{domain.StatusOpen, domain.StatusInProgress}, DueAfter: &t0},
		"all combined": {
			WorkspaceID: ws, ProjectIDs: []string{fx.p.ID, fx.q.ID}, Statuses: []domain.Status{domain.StatusOpen, domain.StatusDone},
			AssigneeIDs: []string{fx.a.ID}, Unassigned: true, DueBefore: &later, UpdatedAfter: &base, Words: []string{"w"},
		},
	}
}

var taskOrders = []domain.TaskOrder{
	{}, {Desc: true},
	{Field: domain.TaskOrderUpdatedAt}, {Field: domain.TaskOrderUpdatedAt, Desc: true},
	{Field: domain.TaskOrderDueAt}, {Field: domain.TaskOrderDueAt, Desc: true},
}

// Every filter in every order, paged at several sizes, returns exactly the
// tasks the oracle keeps, in the order's sequence: ties by id in the
// order's direction, undated tasks last either way, nothing of another
// workspace. FindTaskPages answers the same as FindTasks.
func TestFindTasksFiltersAndOrders(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		fx := newQueryFixture(t, db)
		for name, f := range fx.filters() {
			for _, o := range taskOrders {
				t.Run(name+"/"+o.String(), func(t *testing.T) {
					f.Order = o
					want := []domain.Task{}
					for _, task := range fx.all {
						if matches(task, f) {
							want = append(want, task)
						}
					}
					slices.SortFunc(want, o.Compare)
					for _, size := range []int{1, 5, 100} {
						got := collectPages(t, size, o.Position, func(after *domain.Position, limit int) ([]domain.Task, error) {
							g := f
							g.After, g.Limit = after, limit
							return db.Tasks().FindTasks(ctx, g)
						})
						if got == nil {
							got = []domain.Task{}
						}
						equal(t, fmt.Sprintf("pages of %d", size), got, want)
					}
					page := f
					page.Limit = 7
					pages, err := db.Tasks().FindTaskPages(ctx, []ports.TaskFilter{page, page})
					if err != nil {
						t.Fatal(err)
					}
					first := want[:min(7, len(want))]
					equal(t, "FindTaskPages", pages, [][]domain.Task{first, first})
				})
			}
		}
		// The oracle is the rule; these pin it to the words of the rule.
		titles := func(f ports.TaskFilter) []string {
			tasks, err := db.Tasks().FindTasks(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, task := range tasks {
				if !slices.Contains(out, task.Title) {
					out = append(out, task.Title)
				}
			}
			slices.Sort(out)
			return out
		}
		equal(t, "wri ann", titles(ports.TaskFilter{WorkspaceID: fx.ws.ID, Words: []string{"wri", "ann"}, Limit: 100}),
			[]string{"Write the announcement"})
		equal(t, "write (a word of write-up, not the inside of Rewrite)", titles(ports.TaskFilter{WorkspaceID: fx.ws.ID, Words: []string{"write"}, Limit: 100}),
			[]string{"The writer's guide", "Write the announcement", "write-up: Q3 plan"})
		equal(t, "UP Q3", titles(ports.TaskFilter{WorkspaceID: fx.ws.ID, Words: domain.SearchWords("UP Q3"), Limit: 100}),
			[]string{"write-up: Q3 plan"})
	})
}

// Counts equal the length of the list the same filter keeps, group by
// group, whether they come from the projects' counters (by status or
// project, no other filter) or from the tasks.
func TestCountTasksMatchesTheList(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		fx := newQueryFixture(t, db)
		for name, f := range fx.filters() {
			for _, by := range []domain.TaskCountGroup{domain.CountByStatus, domain.CountByAssignee, domain.CountByProject} {
				t.Run(name+"/"+string(by), func(t *testing.T) {
					counts := map[string]int{}
					for _, task := range fx.all {
						if !matches(task, f) {
							continue
						}
						switch by {
						case domain.CountByStatus:
							counts[string(task.Status)]++
						case domain.CountByProject:
							counts[task.ProjectID]++
						default:
							key := ""
							if task.AssigneeID != nil {
								key = *task.AssigneeID
							}
							counts[key]++
						}
					}
					keys := make([]string, 0, len(counts))
					for k := range counts {
						keys = append(keys, k)
					}
					slices.Sort(keys) // "" (unassigned) first, as null sorts
					want := []domain.TaskCount{}
					for _, k := range keys {
						c := domain.TaskCount{Count: counts[k]}
						if k != "" {
							c.Key = &k
						}
						want = append(want, c)
					}
					got, err := db.Tasks().CountTasks(ctx, f, by)
					if err != nil {
						t.Fatal(err)
					}
					equal(t, "counts", got, want)
				})
			}
		}
	})
}
