package rest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/worktrack/worktrack/cmd/worktrack/wiring"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// The dispatcher is woken by the commit, not by its poll: with polling
// effectively off, the first attempt still comes at once.
func TestWebhookDispatcherIsWokenByTheCommit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		startDispatcher(t, e, e.App, app.DispatcherOptions{Policy: testPolicy(5 * time.Second), PollInterval: time.Hour})
		rc := newReceiver(t, nil)
		newWebhook(t, e, rc.URL(), "project.created")
		time.Sleep(50 * time.Millisecond) // the dispatcher is idle, waiting
		start := time.Now()
		newProject(t, e, "WAK")
		got := rc.WaitFor(1)
		if d := got[0].At.Sub(start); d > time.Second {
			t.Fatalf("first attempt %v after the commit; docs/api.md#retries allows one second", d)
		}
	})
}

// A dispatcher of another process (its own connection pool, no in-process
// signal) is woken by PostgreSQL's NOTIFY.
func TestWebhookPostgresNotifyWakesOtherProcesses(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	api, other := openPostgres(t, url), openPostgres(t, url)
	e := apitest.NewWith(t, api, apitest.Settings{AllowPrivateWebhooks: true})
	remote := appOver(other, e.Clock)
	startDispatcherWith(t, e, remote, other, webhook.NewSender(webhook.SenderOptions{Timeout: time.Second, AllowPrivate: true}),
		app.DispatcherOptions{Policy: testPolicy(5 * time.Second), PollInterval: time.Hour})
	rc := newReceiver(t, nil)
	newWebhook(t, e, rc.URL(), "project.created")
	time.Sleep(100 * time.Millisecond) // the other dispatcher is idle, listening
	start := time.Now()
	newProject(t, e, "NTF")
	got := rc.WaitFor(1)
	if d := got[0].At.Sub(start); d > time.Second {
		t.Fatalf("first attempt %v after the commit", d)
	}
}

func openPostgres(t testing.TB, url string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// appOver is the core as another serve process would wire it over db,
// sharing the test's clock.
func appOver(db *store.DB, clock ports.Clock) *app.App {
	return wiring.App(db, wiring.Core{Clock: clock, AllowPrivateWebhooks: true})
}

// failAfter is a Transactor whose transactions fail after fn has done all
// its work, so that they roll back.
type failAfter struct{ db *store.DB }

var errInjected = errors.New("injected failure after the change")

func (f failAfter) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	return f.db.InTx(ctx, func(ctx context.Context) error {
		if err := fn(ctx); err != nil {
			return err
		}
		return errInjected
	})
}

// A change whose transaction rolls back leaves no event and no delivery.
func TestWebhookRolledBackChangeRecordsNothing(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		rc := newReceiver(t, nil)
		newWebhook(t, e, rc.URL(), allEvents...)
		prj := newProject(t, e, "RBK")
		count := func(table string) int64 {
			var n int64
			if err := db.Gorm().Table(table).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		events, dels, tasks := count("events"), count("webhook_deliveries"), count("tasks")
		if events != 1 || dels != 1 {
			t.Fatalf("the committed project.created: %d events, %d deliveries", events, dels)
		}
		failing := app.New(app.Deps{
			Tx: failAfter{db}, Clock: e.Clock, Workspaces: db.Workspaces(), Users: db.Users(), Keys: db.APIKeys(),
			Projects: db.Projects(), Tasks: db.Tasks(), Webhooks: db.Webhooks(), EventLog: db.Events(),
			Deliveries: db.Deliveries(), Payloads: wire.Payloads{}, Addresses: webhook.AddressChecker{AllowPrivate: true},
			EventWatch: db,
		}, app.Options{})
		actor := domain.Actor{UserID: e.Member.User.ID, WorkspaceID: e.Workspace.ID, Role: domain.RoleMember}
		ctx := context.Background()
		if _, err := failing.Tasks.Create(ctx, actor, prj, domain.TaskFields{Title: domain.Set("Never")}); !errors.Is(err, errInjected) {
			t.Fatalf("create: %v", err)
		}
		if _, err := failing.Projects.Update(ctx, actor, prj, domain.ProjectFields{Name: domain.Set("Never")}); !errors.Is(err, errInjected) {
			t.Fatalf("update: %v", err)
		}
		if count("events") != events || count("webhook_deliveries") != dels || count("tasks") != tasks {
			t.Fatalf("a rolled-back change left %d events, %d deliveries, %d tasks", count("events"), count("webhook_deliveries"), count("tasks"))
		}
		// The same calls through a committing transaction do record.
		ok := appOver(db, e.Clock)
		if _, err := ok.Tasks.Create(ctx, actor, prj, domain.TaskFields{Title: domain.Set("Ever")}); err != nil {
			t.Fatal(err)
		}
		if count("events") != events+1 || count("webhook_deliveries") != dels+1 {
			t.Fatal("a committed change recorded no event")
		}
	})
}
