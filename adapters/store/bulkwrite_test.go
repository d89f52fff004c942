package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

// A bulk creation's rows (500 tasks, their events, a delivery per event
// and subscribed webhook: 10,000) are written a bounded number of values a
// statement on SQLite, whose driver binds in time quadratic in them, and
// every row arrives whichever statement carried it: every task, each event
// with every subscriber, every delivery once. Beside it, a second
// workspace's rows are untouched.
func TestBulkWritesAreSplitAndWhole(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		p := newProject(t, db, ws, "BULK", base)
		otherTask := newTask(t, db, newProject(t, db, other, "OTH", base), domain.TaskFields{Title: domain.Set("theirs")}, base)
		var hooks []string
		for range domain.MaxWebhooksPerWorkspace {
			hooks = append(hooks, newWebhook(t, db, ws, base, "task.created").ID)
		}
		slices.Sort(hooks)

		const n = 500
		tasks := make([]domain.Task, n)
		events := make([]domain.Event, n)
		payloads := make([][]byte, n)
		for i := range n {
			task, err := domain.NewTask(domain.NewID(domain.PrefixTask), ws.ID, p.ID,
				domain.TaskFields{Title: domain.Set(fmt.Sprintf("task %03d", i))}, base)
			if err != nil {
				t.Fatal(err)
			}
			tasks[i] = task
			events[i] = domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ws.ID, Type: domain.EventTaskCreated, CreatedAt: domain.Timestamp(base)}
			payloads[i] = fmt.Appendf(nil, `{"n":%d}`, i)
		}

		counter := storetest.CountStatements(db)
		var deliveries []domain.Delivery
		err := db.InTx(ctx, func(ctx context.Context) error {
			if err := db.Tasks().CreateTasks(ctx, tasks); err != nil {
				return err
			}
			subs, err := db.Events().CreateEvents(ctx, events, payloads)
			if err != nil {
				return err
			}
			for i, e := range events {
				got := slices.Sorted(slices.Values(subs[i]))
				if !slices.Equal(got, hooks) {
					return fmt.Errorf("event %d of %d: subscribers %v, want the workspace's %d webhooks", i, n, got, len(hooks))
				}
				for _, h := range subs[i] {
					deliveries = append(deliveries, domain.NewDelivery(domain.NewID(domain.PrefixDelivery), h, e))
				}
			}
			return db.Deliveries().CreateDeliveries(ctx, deliveries)
		})
		if err != nil {
			t.Fatal(err)
		}

		inserts := map[string]int{}
		for _, stmt := range counter.Statements() {
			table, ok := strings.CutPrefix(stmt, "INSERT INTO ")
			if !ok {
				continue
			}
			table, _, _ = strings.Cut(table, " ")
			inserts[table]++
			if values := strings.Count(stmt, "?"); db.Dialect() == store.DialectSQLite && values > store.SQLiteParams {
				t.Errorf("an insert into %s binds %d values, more than %d", table, values, store.SQLiteParams)
			}
		}
		// 13 columns a delivery: 39 a statement on SQLite, 1,000 on PostgreSQL.
		want := 10
		if db.Dialect() == store.DialectSQLite {
			want = (len(deliveries) + store.SQLiteParams/13 - 1) / (store.SQLiteParams / 13)
		}
		if got := inserts["webhook_deliveries"]; got != want {
			t.Errorf("%d inserts of %d deliveries, want %d (all: %v)", got, len(deliveries), want, inserts)
		}

		var titles []string
		if err := db.Gorm().Raw("SELECT title FROM tasks WHERE workspace_id = ? AND project_id = ?", ws.ID, p.ID).Scan(&titles).Error; err != nil {
			t.Fatal(err)
		}
		slices.Sort(titles)
		for i := range n {
			if i >= len(titles) || titles[i] != fmt.Sprintf("task %03d", i) {
				t.Fatalf("the tasks stored are not the %d created: %d of them, %v...", n, len(titles), titles[:min(3, len(titles))])
			}
		}
		if len(titles) != n {
			t.Fatalf("%d tasks stored, want %d", len(titles), n)
		}
		count := func(q string, args ...any) int64 {
			t.Helper()
			c, err := db.ReadCount(ctx, q, args...)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		if c := count("SELECT count(*) FROM webhook_deliveries WHERE workspace_id = ?", ws.ID); c != int64(n*len(hooks)) {
			t.Errorf("%d deliveries stored, want %d", c, n*len(hooks))
		}
		if c := count("SELECT count(DISTINCT event_id) FROM webhook_deliveries WHERE workspace_id = ?", ws.ID); c != n {
			t.Errorf("deliveries of %d events, want %d", c, n)
		}
		if c := count("SELECT count(*) FROM events WHERE workspace_id = ?", ws.ID); c != n {
			t.Errorf("%d events stored, want %d", c, n)
		}
		if c := count("SELECT count(*) FROM tasks WHERE workspace_id = ?", other.ID); c != 1 {
			t.Errorf("the other workspace has %d tasks, want its 1 (%s)", c, otherTask.ID)
		}
		if c := count("SELECT count(*) FROM webhook_deliveries WHERE workspace_id = ?", other.ID); c != 0 {
			t.Errorf("the other workspace has %d deliveries, want none", c)
		}
	})
}
