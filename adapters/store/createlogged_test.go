package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// CreateTaskLogged writes the task, its event, and a delivery as
// domain.NewDelivery makes it for each of the workspace's active webhooks
// subscribed to the event's type, the i-th by id taking the i-th id minted;
// another workspace's webhooks, and webhooks of other types, get none. A
// project of another workspace is resource_not_found and writes nothing.
func TestCreateTaskLogged(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		p := newProject(t, db, ws, "LOG", base)
		foreign := newProject(t, db, other, "OTH", base)
		a := newWebhook(t, db, ws, base, "task.created")
		b := newWebhook(t, db, ws, base, "task.updated", "task.created")
		newWebhook(t, db, ws, base, "task.updated")
		newWebhook(t, db, other, base, "task.created")
		subscribed := []domain.Webhook{a, b}
		slices.SortFunc(subscribed, func(x, y domain.Webhook) int { return compareStrings(x.ID, y.ID) })

		create := func(p domain.Project) (domain.Task, domain.Event, []string, int, error) {
			task, err := domain.NewTask(domain.NewID(domain.PrefixTask), ws.ID, p.ID, domain.TaskFields{Title: domain.Set("Logged")}, base)
			if err != nil {
				t.Fatal(err)
			}
			e := domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ws.ID, Type: domain.EventTaskCreated,
				CreatedAt: domain.Timestamp(base), Data: task}
			var ids []string // in the order minted
			mint := func() string {
				ids = append(ids, domain.NewID(domain.PrefixDelivery))
				return ids[len(ids)-1]
			}
			n, err := db.Tasks().CreateTaskLogged(ctx, task, ports.Outboxed{Event: e, Payload: []byte(`{"id":"` + e.ID + `"}`), NewDeliveryID: mint})
			return task, e, ids, n, err
		}

		task, e, ids, n, err := create(p)
		if err != nil || n != 2 {
			t.Fatalf("create: %d deliveries, %v", n, err)
		}
		got, err := db.Tasks().FindTaskByID(ctx, ws.ID, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "task", got, task)
		if pr, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID); err != nil || pr.TaskCount != 1 {
			t.Fatalf("the project's task_count: %d, %v", pr.TaskCount, err)
		}
		var payload []byte
		if err := db.Gorm().Raw("SELECT payload FROM events WHERE id = ? AND workspace_id = ?", e.ID, ws.ID).Row().Scan(&payload); err != nil || string(payload) != `{"id":"`+e.ID+`"}` {
			t.Fatalf("the event's payload: %q, %v", payload, err)
		}
		for i, w := range subscribed {
			ds, err := db.Deliveries().FindDeliveries(ctx, ports.DeliveryFilter{WorkspaceID: ws.ID, WebhookID: w.ID, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "deliveries of "+w.ID, ds, []domain.Delivery{domain.NewDelivery(ids[i], w.ID, e)})
		}
		var total int64
		if err := db.Gorm().Table("webhook_deliveries").Count(&total).Error; err != nil || total != 2 {
			t.Fatalf("%d deliveries in all, %v", total, err)
		}

		// A project of another workspace: the foreign key refuses it.
		_, e2, _, n, err := create(foreign)
		wantError(t, err, domain.CodeNotFound, "", "No such project: '"+foreign.ID+"'")
		if n != 0 {
			t.Fatalf("a refused create wrote %d deliveries", n)
		}
		var events, tasks int64
		db.Gorm().Table("events").Where("id = ?", e2.ID).Count(&events)
		db.Gorm().Table("tasks").Count(&tasks)
		if err := db.Gorm().Table("webhook_deliveries").Count(&total).Error; err != nil || events != 0 || tasks != 1 || total != 2 {
			t.Fatalf("a refused create left %d events, %d tasks, %d deliveries (%v)", events, tasks, total, err)
		}
	})
}

// A workspace with more webhooks subscribed than it may have (made before
// the limit) still gets a delivery for each: on PostgreSQL the statement's
// ids run out, and the creation is made again in a transaction.
func TestCreateTaskLoggedBeyondTheWebhookLimit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws := newWorkspace(t, db)
		p := newProject(t, db, ws, "MNY", base)
		for range domain.MaxWebhooksPerWorkspace + 1 {
			newWebhook(t, db, ws, base, "task.created")
		}
		task, err := domain.NewTask(domain.NewID(domain.PrefixTask), ws.ID, p.ID, domain.TaskFields{Title: domain.Set("Many")}, base)
		if err != nil {
			t.Fatal(err)
		}
		e := domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ws.ID, Type: domain.EventTaskCreated,
			CreatedAt: domain.Timestamp(base), Data: task}
		mint := func() string { return domain.NewID(domain.PrefixDelivery) }
		n, err := db.Tasks().CreateTaskLogged(ctx, task, ports.Outboxed{Event: e, Payload: []byte("{}"), NewDeliveryID: mint})
		if err != nil || n != domain.MaxWebhooksPerWorkspace+1 {
			t.Fatalf("create: %d deliveries, %v", n, err)
		}
		var rows, tasks int64
		db.Gorm().Table("webhook_deliveries").Where("event_id = ?", e.ID).Count(&rows)
		db.Gorm().Table("tasks").Count(&tasks)
		if rows != int64(n) || tasks != 1 {
			t.Fatalf("%d deliveries and %d tasks written", rows, tasks)
		}
	})
}
