package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

func TestDeliveryStoreListing(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Deliveries()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		w := newWebhook(t, db, ws, base, "task.created")
		w2 := newWebhook(t, db, ws, base, "task.created")
		var mine []domain.Delivery
		for i := range 9 {
			e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base.Add(time.Duration(i/3)*time.Second))
			ds := newDeliveries(t, db, e, w, w2)
			mine = append(mine, ds[0])
		}
		got, err := s.FindDeliveryByID(ctx, ws.ID, w.ID, mine[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "delivery", got, mine[0])
		for _, c := range []struct{ ws, wh string }{{other.ID, w.ID}, {ws.ID, w2.ID}} {
			_, err := s.FindDeliveryByID(ctx, c.ws, c.wh, mine[0].ID)
			wantError(t, err, domain.CodeNotFound, "", "No such webhook delivery: '"+mine[0].ID+"'")
		}

		// Finish some, so that the status filter has something to choose.
		owner := "dsp_test"
		claimed, err := s.ClaimDeliveries(ctx, ports.ClaimRequest{Owner: owner, Now: base.Add(time.Hour), LeaseUntil: base.Add(2 * time.Hour), Limit: 100})
		if err != nil || len(claimed) != 18 {
			t.Fatalf("claim: %d %v", len(claimed), err)
		}
		var failed []domain.Delivery
		for i, d := range mine {
			if i%3 == 0 {
				d = d.Fail("gone")
				failed = append(failed, d)
				mine[i] = d
				if ok, err := s.FinishDelivery(ctx, d, owner); !ok || err != nil {
					t.Fatalf("finish: %v %v", ok, err)
				}
			}
		}
		sortByPosition(mine, domain.Delivery.Position)
		sortByPosition(failed, domain.Delivery.Position)
		list := func(status *domain.DeliveryStatus) []domain.Delivery {
			return collectPages(t, 2, domain.Delivery.Position, func(after *domain.Position, limit int) ([]domain.Delivery, error) {
				return s.FindDeliveries(ctx, ports.DeliveryFilter{WorkspaceID: ws.ID, WebhookID: w.ID, Status: status, After: after, Limit: limit})
			})
		}
		equal(t, "all deliveries", list(nil), mine)
		st := domain.DeliveryFailed
		equal(t, "failed deliveries", list(&st), failed)
		if got, err := s.FindDeliveries(ctx, ports.DeliveryFilter{WorkspaceID: other.ID, WebhookID: w.ID, Limit: 10}); err != nil || len(got) != 0 {
			t.Fatalf("another workspace sees %d deliveries (%v)", len(got), err)
		}
	})
}

// TestAClaimCarriesEachWebhooksOwnSecrets: a claim opens each webhook's
// sealed secrets and headers once, however many of its deliveries it takes;
// every delivery still goes out with its own webhook's URL, secrets and
// headers.
func TestAClaimCarriesEachWebhooksOwnSecrets(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws := newWorkspace(t, db)
		var hooks []domain.Webhook
		for i := range 3 {
			w, err := domain.NewWebhook(domain.NewID(domain.PrefixWebhook), ws.ID, domain.WebhookFields{
				URL:     domain.Set(fmt.Sprintf("https://hooks.example.com/%d", i)),
				Events:  domain.Set([]string{"task.created"}),
				Headers: domain.Set(map[string]string{"X-Hook": fmt.Sprint(i)}),
			}, base)
			if err != nil {
				t.Fatal(err)
			}
			if i == 1 {
				w = w.RotateSecret(base, time.Hour) // a previous secret too
			}
			if err := db.Webhooks().CreateWebhook(ctx, w); err != nil {
				t.Fatal(err)
			}
			hooks = append(hooks, w)
		}
		for i := range 2 {
			e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base.Add(time.Duration(i)*time.Second))
			newDeliveries(t, db, e, hooks...)
		}
		got, err := db.Deliveries().ClaimDeliveries(ctx, ports.ClaimRequest{Owner: "dsp_a", Now: base.Add(time.Minute), LeaseUntil: base.Add(2 * time.Minute), Limit: 10})
		if err != nil || len(got) != 6 {
			t.Fatalf("claim: %d %v", len(got), err)
		}
		byID := map[string]domain.Webhook{}
		for _, w := range hooks {
			byID[w.ID] = w
		}
		for _, d := range got {
			w := byID[d.Delivery.WebhookID]
			if d.URL != w.URL || d.Secret != w.Secret || d.PreviousSecret != w.PreviousSecret ||
				!reflect.DeepEqual(d.PreviousSecretExpiresAt, w.PreviousSecretExpiresAt) || !reflect.DeepEqual(d.Headers, w.Headers) {
				t.Errorf("delivery %s of %s went out as %s, secret %q, previous %q until %v, headers %v; want %s, %q, %q until %v, %v",
					d.Delivery.ID, w.ID, d.URL, d.Secret, d.PreviousSecret, d.PreviousSecretExpiresAt, d.Headers,
					w.URL, w.Secret, w.PreviousSecret, w.PreviousSecretExpiresAt, w.Headers)
			}
		}
	})
}

// A claim on PostgreSQL is planned for its own values and for the table as
// it is, never from a prepared statement's cached plan: one settled while a
// new database's first deliveries were few read the whole table by
// sequential scans at every claim once it had grown (60-370 ms a claim at
// 23,000 deliveries). On one connection, a prepared claim would be on it
// from the first claim.
func TestAClaimIsNotAPreparedStatement(t *testing.T) {
	t.Parallel()
	ctx, _, db := onePostgresConnection(t)
	ws := newWorkspace(t, db)
	w := newWebhook(t, db, ws, base, "task.created")
	for i := range 8 {
		e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base.Add(time.Duration(i)*time.Second))
		newDeliveries(t, db, e, w)
	}
	for i := range 8 {
		got, err := db.Deliveries().ClaimDeliveries(ctx, ports.ClaimRequest{Owner: "dsp_a", Now: base.Add(time.Hour),
			LeaseUntil: base.Add(2 * time.Hour), Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim %d: %d %v", i, len(got), err)
		}
	}
	// The pattern is split so that this statement, prepared too, is not
	// counted.
	prepared, err := db.ReadCount(ctx, "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%FOR UPDATE SKIP' || ' LOCKED%'")
	if err != nil {
		t.Fatal(err)
	}
	// The session does prepare statements (a URL's default_query_exec_mode
	// or statement_cache_capacity=0 would make the count above 0 whatever
	// the claim does).
	all, err := db.ReadCount(ctx, "SELECT count(*) FROM pg_prepared_statements")
	if err != nil {
		t.Fatal(err)
	}
	if all == 0 {
		t.Fatal("the connection prepares no statement at all: the check below could not fail")
	}
	if prepared != 0 {
		t.Errorf("the connection holds %d prepared claim statement(s); want the claim planned for each run", prepared)
	}
}

// A claim on PostgreSQL has the statement deadline though it runs for no
// workspace (SQLite's driver cannot stop a statement once started): one
// stuck behind a lock is stopped, reads as statement_timeout, and leases
// nothing, so the next claim takes the same deliveries.
func TestAStuckClaimIsStoppedByTheStatementDeadline(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	ctx := context.Background()
	ws := newWorkspace(t, db)
	w := newWebhook(t, db, ws, base, "task.created")
	e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base)
	ds := newDeliveries(t, db, e, w)
	req := ports.ClaimRequest{Owner: "dsp_a", Now: base.Add(time.Hour), LeaseUntil: base.Add(2 * time.Hour), Limit: 10}

	lock := db.Gorm().Begin()
	t.Cleanup(func() { _ = lock.Rollback() }) // should the test fail with the lock held
	if err := lock.Exec("LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE").Error; err != nil {
		t.Fatal(err)
	}
	db.SetBudget(store.Budget{StatementTimeout: 300 * time.Millisecond})
	// Without the deadline the claim would wait for the lock for ever;
	// this context only keeps such a failure from hanging the test.
	guard, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := db.Deliveries().ClaimDeliveries(guard, req)
	if e, ok := domain.AsError(err); !ok || e.Code != domain.CodeUnavailable || e.Limit != domain.LimitStatementTime {
		t.Fatalf("a claim stuck behind a lock: %v, want service_unavailable naming statement_timeout", err)
	}
	if err := lock.Rollback().Error; err != nil {
		t.Fatal(err)
	}
	db.SetBudget(store.Budget{})
	got, err := db.Deliveries().ClaimDeliveries(ctx, req)
	if err != nil || len(got) != 1 || got[0].Delivery.ID != ds[0].ID {
		t.Fatalf("the claim after the stopped one: %d %v, want %s", len(got), err, ds[0].ID)
	}
}

func TestDeliveryStoreClaims(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Deliveries()
		ws := newWorkspace(t, db)
		w := newWebhook(t, db, ws, base, "task.created")
		w2 := newWebhook(t, db, ws, base, "task.created")
		e, payload := newEvent(t, db, ws, domain.EventTaskCreated, base)
		ds := newDeliveries(t, db, e, w, w2)
		later, _ := newEvent(t, db, ws, domain.EventTaskCreated, base.Add(time.Minute))
		newDeliveries(t, db, later, w)
		claim := func(owner string, now time.Time, limit int, skip ...string) []ports.Dispatch {
			t.Helper()
			got, err := s.ClaimDeliveries(ctx, ports.ClaimRequest{Owner: owner, Now: now, LeaseUntil: now.Add(time.Minute), Limit: limit, SkipWebhooks: skip})
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			return got
		}
		ids := func(ps []ports.Dispatch) []string {
			var out []string
			for _, p := range ps {
				out = append(out, p.Delivery.ID)
			}
			slices.Sort(out)
			return out
		}

		// Only what is due; the claim carries the webhook's URL and secret
		// and the payload's exact bytes.
		got := claim("a", base, 10, w2.ID)
		if len(got) != 1 || got[0].Delivery.ID != ds[0].ID || got[0].URL != w.URL || got[0].Secret != w.Secret || string(got[0].Payload) != string(payload) {
			t.Fatalf("first claim: %+v", got)
		}
		equal(t, "claimed delivery", got[0].Delivery, ds[0])
		// Leased: nobody else gets it, not even its owner again.
		if got := claim("b", base.Add(30*time.Second), 10, w2.ID); len(got) != 0 {
			t.Fatalf("a leased delivery was claimed again: %+v", got)
		}
		// Another owner cannot finish or release it.
		out := ds[0].RecordAttempt(domain.AttemptResult{StatusCode: 500}, base.Add(61*time.Second), domain.RetryPolicy{Base: time.Second, Max: time.Minute, Window: time.Hour})
		if ok, err := s.FinishDelivery(ctx, out.Delivery, "b"); ok || err != nil {
			t.Fatalf("finish by a stranger: %v %v", ok, err)
		}
		if err := s.ReleaseDeliveries(ctx, "b", []string{ds[0].ID}); err != nil {
			t.Fatal(err)
		}
		if got := claim("b", base.Add(30*time.Second), 10, w2.ID); len(got) != 0 {
			t.Fatal("a stranger released a lease")
		}
		// The owner's lapsed lease (it crashed) frees the delivery.
		// (The later event's delivery is due by then too.)
		got = claim("b", base.Add(61*time.Second), 10, w2.ID)
		if len(got) != 2 || got[0].Delivery.ID != ds[0].ID {
			t.Fatalf("after the lease lapsed: %v", ids(got))
		}
		if ok, _ := s.FinishDelivery(ctx, out.Delivery, "a"); ok {
			t.Fatal("the crashed owner finished a delivery another dispatcher holds")
		}
		if ok, err := s.FinishDelivery(ctx, out.Delivery, "b"); !ok || err != nil {
			t.Fatalf("finish by the owner: %v %v", ok, err)
		}
		stored, _ := s.FindDeliveryByID(ctx, ws.ID, w.ID, ds[0].ID)
		equal(t, "finished", stored, out.Delivery)
		// Retried at its time, not before.
		if got := claim("c", base.Add(61*time.Second), 10, w2.ID); len(got) != 0 {
			t.Fatalf("claimed before its retry time: %v", ids(got))
		}
		if err := s.ReleaseDeliveries(ctx, "b", ids(got)); err != nil {
			t.Fatal(err)
		}

		// The limit holds; a released delivery can be claimed at once.
		if got := claim("c", base.Add(2*time.Minute), 1, w.ID); len(got) != 1 || got[0].Delivery.ID != ds[1].ID {
			t.Fatalf("skip and limit: %v", ids(got))
		}
		if err := s.ReleaseDeliveries(ctx, "c", []string{ds[1].ID}); err != nil {
			t.Fatal(err)
		}
		if got := claim("d", base.Add(2*time.Minute), 10, w.ID); len(got) != 1 || got[0].Delivery.ID != ds[1].ID {
			t.Fatalf("after release: %v", ids(got))
		}

		// An inactive webhook's deliveries are not claimed.
		w3 := newWebhook(t, db, ws, base, "task.created")
		newDeliveries(t, db, e, w3)
		w3.Active = false
		if err := db.Webhooks().UpdateWebhook(ctx, w3); err != nil {
			t.Fatal(err)
		}
		for _, p := range claim("e", base.Add(time.Hour), 10) {
			if p.Delivery.WebhookID == w3.ID {
				t.Fatal("claimed a delivery of an inactive webhook")
			}
		}
	})
}

func TestDeliveryStoreRescheduleAndFail(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Deliveries()
		ws := newWorkspace(t, db)
		w, w2 := newWebhook(t, db, ws, base, "task.created"), newWebhook(t, db, ws, base, "task.created")
		var ds []domain.Delivery
		for i := range 3 {
			e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base.Add(time.Duration(i)*time.Second))
			ds = append(ds, newDeliveries(t, db, e, w, w2)...)
		}
		n, err := s.FailPendingDeliveries(ctx, ws.ID, w.ID, "deactivated")
		if err != nil || n != 3 {
			t.Fatalf("FailPendingDeliveries: %d %v", n, err)
		}
		for _, d := range ds {
			got, _ := s.FindDeliveryByID(ctx, ws.ID, d.WebhookID, d.ID)
			if d.WebhookID == w.ID {
				equal(t, "failed", got, d.Fail("deactivated"))
			} else if got.Status != domain.DeliveryPending {
				t.Fatalf("another webhook's delivery was failed: %+v", got)
			}
		}
		if n, _ := s.FailPendingDeliveries(ctx, ws.ID, w.ID, "again"); n != 0 {
			t.Fatalf("failed %d already failed deliveries", n)
		}

		r := ds[0].Fail("deactivated").Redeliver(base.Add(48 * time.Hour))
		if err := s.RescheduleDelivery(ctx, r); err != nil {
			t.Fatal(err)
		}
		got, _ := s.FindDeliveryByID(ctx, ws.ID, w.ID, r.ID)
		equal(t, "redelivered", got, r)
		foreign := r
		foreign.WorkspaceID = newWorkspace(t, db).ID
		wantCode(t, s.RescheduleDelivery(ctx, foreign), domain.CodeNotFound, "")

		// The schema refuses a pending delivery with no next attempt.
		bad := ds[1]
		bad.ID = domain.NewID(domain.PrefixDelivery)
		bad.NextAttemptAt = nil
		if err := s.CreateDeliveries(ctx, []domain.Delivery{bad}); err == nil {
			t.Fatal("a pending delivery without next_attempt_at was stored")
		}
	})
}

// Concurrent claims on PostgreSQL (FOR UPDATE SKIP LOCKED) never hand one
// delivery to two dispatchers.
func TestPostgresConcurrentClaims(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	ctx := context.Background()
	ws := newWorkspace(t, db)
	w := newWebhook(t, db, ws, base, "task.created")
	const n = 300
	for i := range n {
		e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base.Add(time.Duration(i)*time.Millisecond))
		newDeliveries(t, db, e, w)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func(owner string) {
			defer wg.Done()
			for {
				now := base.Add(time.Hour)
				got, err := db.Deliveries().ClaimDeliveries(ctx, ports.ClaimRequest{Owner: owner, Now: now, LeaseUntil: now.Add(time.Hour), Limit: 7})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, p := range got {
					if prev, dup := seen[p.Delivery.ID]; dup {
						errs <- fmt.Errorf("%s claimed by %s and %s", p.Delivery.ID, prev, owner)
					}
					seen[p.Delivery.ID] = owner
				}
				mu.Unlock()
			}
		}(fmt.Sprintf("dsp_%d", g))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("claimed %d of %d deliveries", len(seen), n)
	}
}

// A PostgreSQL dispatcher is notified when another process's deliveries
// commit: not when they roll back, not by another schema of the same
// database, and not by its own process's commits (the core wakes it in
// process after those).
func TestPostgresWatchDeliveries(t *testing.T) {
	t.Parallel()
	u := storetest.PostgresURL(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() *store.DB {
		db, err := store.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	// db is this process's handle and sibling a second one of the same
	// process (its origin); other is another process's, on the same schema.
	db, other, neighbour := open(), open(), storetest.Postgres(t)
	sibling, err := store.Open(ctx, u, store.WithOrigin(db.Origin()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sibling.Close() })
	c, err := db.WatchDeliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, db)
	w := newWebhook(t, db, ws, base, "task.created")
	nws := newWorkspace(t, neighbour)
	nw := newWebhook(t, neighbour, nws, base, "task.created")
	quiet := func(what string) {
		t.Helper()
		select {
		case <-c:
			t.Fatalf("notified after %s", what)
		case <-time.After(300 * time.Millisecond):
		}
	}

	e, _ := newEvent(t, neighbour, nws, domain.EventTaskCreated, base)
	newDeliveries(t, neighbour, e, nw)
	quiet("a commit in another schema")

	boom := errors.New("boom")
	err = other.InTx(ctx, func(ctx context.Context) error {
		e := domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ws.ID, Type: domain.EventTaskCreated, CreatedAt: base}
		if _, err := other.Events().CreateEvents(ctx, []domain.Event{e}, [][]byte{[]byte(`{}`)}); err != nil {
			return err
		}
		if err := other.Deliveries().CreateDeliveries(ctx, []domain.Delivery{domain.NewDelivery(domain.NewID(domain.PrefixDelivery), w.ID, e)}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	quiet("a rollback")

	e, _ = newEvent(t, db, ws, domain.EventTaskCreated, base)
	newDeliveries(t, db, e, w)
	quiet("a commit of its own process")
	e, _ = newEvent(t, sibling, ws, domain.EventTaskCreated, base)
	newDeliveries(t, sibling, e, w)
	quiet("a commit of its own process through another handle")

	e, _ = newEvent(t, other, ws, domain.EventTaskCreated, base)
	newDeliveries(t, other, e, w)
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatal("no notification after another process's commit")
	}
	cancel()
	for range c {
	}
}

func TestSQLiteWatchDeliveriesOnlyCloses(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := db.WatchDeliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, ok := <-c; ok {
		t.Fatal("SQLite has no notifications to send")
	}
}

// The claim and the delivery listing stay index scans however many
// finished deliveries pile up: the claim reads the partial index of
// pending deliveries per webhook, the listing the (webhook_id[, status], created_at, id)
// indexes.
func TestPostgresDeliveryPlansUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	ctx := context.Background()
	ws := newWorkspace(t, db)
	w := newWebhook(t, db, ws, base, "task.created")
	e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base)
	err := db.Gorm().Exec(`
		INSERT INTO webhook_deliveries (id, workspace_id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, window_start, created_at)
		SELECT 'whd_' || lpad(g::text, 22, '0'), ?, ?, ?, 'task.created',
		       CASE WHEN g % 1000 = 0 THEN 'pending' ELSE 'succeeded' END, 1,
		       CASE WHEN g % 1000 = 0 THEN TIMESTAMPTZ '2026-01-01 00:00:00+00' END,
		       TIMESTAMPTZ '2026-01-01 00:00:00+00', TIMESTAMPTZ '2026-01-01 00:00:00+00' + g * INTERVAL '1 millisecond'
		FROM generate_series(1, 50000) AS g`, ws.ID, w.ID, e.ID).Error
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm().Exec(`ANALYZE webhook_deliveries`).Error; err != nil {
		t.Fatal(err)
	}
	plan := func(sql string, args ...any) string {
		t.Helper()
		var lines []string
		if err := db.Gorm().WithContext(ctx).Raw("EXPLAIN "+sql, args...).Scan(&lines).Error; err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	now := base.Add(time.Hour)
	q, args := store.PGClaim(ports.ClaimRequest{
		Owner: "dsp", Now: now, LeaseUntil: now, Limit: 10, PerWebhook: 16,
		Room: map[string]int{w.ID: 3}, SkipWebhooks: []string{"whk_other"},
	})
	claim := plan(q, args...)
	if !strings.Contains(claim, "webhook_deliveries_webhook_due_idx") || strings.Contains(claim, "Seq Scan on webhook_deliveries") {
		t.Fatalf("the claim does not read the pending deliveries per webhook by their index:\n%s", claim)
	}
	list := plan(`SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND workspace_id = ? AND status = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT 21`,
		w.ID, ws.ID, "failed", store.Time(base), "whd_")
	if !strings.Contains(list, "webhook_deliveries_webhook_status_created_idx") || strings.Contains(list, "Sort") {
		t.Fatalf("the filtered listing is not a keyset range scan:\n%s", list)
	}
}

// A claim offers every webhook its room, however many older deliveries
// another webhook has due: a fast webhook beside a slow one with a backlog
// is not starved, and the claim reads each webhook's due deliveries only
// up to its room. The slow one's backlog is larger than the deliveries a
// SQLite claim sorts (sqliteCandidates), which once were the oldest due of
// all webhooks, all the slow one's.
func TestClaimReachesEveryWebhookWithRoom(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Deliveries()
		ws := newWorkspace(t, db)
		slow := newWebhook(t, db, ws, base, "task.created")
		fast := newWebhook(t, db, ws, base, "task.created")
		backlog := func(w domain.Webhook, n int, from time.Time) {
			t.Helper()
			es := make([]domain.Event, n)
			payloads := make([][]byte, n)
			ds := make([]domain.Delivery, n)
			for i := range n {
				es[i] = domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ws.ID, Type: domain.EventTaskCreated,
					CreatedAt: domain.Timestamp(from.Add(time.Duration(i) * time.Millisecond))}
				payloads[i] = []byte(`{}`)
				ds[i] = domain.NewDelivery(domain.NewID(domain.PrefixDelivery), w.ID, es[i])
			}
			if _, err := db.Events().CreateEvents(ctx, es, payloads); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateDeliveries(ctx, ds); err != nil {
				t.Fatal(err)
			}
		}
		backlog(slow, 1100, base)
		backlog(fast, 3, base.Add(time.Minute))
		now := base.Add(time.Hour)
		claimed, err := s.ClaimDeliveries(ctx, ports.ClaimRequest{
			Owner: "x", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10, PerWebhook: 4, Room: map[string]int{slow.ID: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for i, d := range claimed {
			per[d.Delivery.WebhookID]++
			if i > 0 && d.Delivery.NextAttemptAt.Before(*claimed[i-1].Delivery.NextAttemptAt) {
				t.Fatalf("claimed out of due order: %v", claimed)
			}
		}
		if per[slow.ID] != 1 || per[fast.ID] != 3 || len(claimed) != 4 {
			t.Fatalf("claimed per webhook %v (%d in all); want slow 1 (its room), fast 3 (all it has due)", per, len(claimed))
		}
		// The oldest due of all come first when Limit is smaller than the room
		// offered: the slow webhook's one, then the fast one's oldest.
		if claimed[0].Delivery.WebhookID != slow.ID {
			t.Fatalf("first claimed %s; want the slow webhook's oldest", claimed[0].Delivery.WebhookID)
		}
		// Skipped, the slow webhook gives nothing, and the fast one has nothing
		// left unleased.
		again, err := s.ClaimDeliveries(ctx, ports.ClaimRequest{
			Owner: "y", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10, PerWebhook: 4, SkipWebhooks: []string{slow.ID},
		})
		if err != nil || len(again) != 0 {
			t.Fatalf("claim skipping the slow webhook: %d %v; want none", len(again), err)
		}
	})
}

// FinishDeliveries writes many outcomes at once (one statement on
// PostgreSQL), each only while the caller holds its lease, and can be
// called again with the same outcomes without harm (the dispatcher retries
// a write that failed on a broken connection).
func TestDeliveryStoreFinishMany(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Deliveries()
		ws := newWorkspace(t, db)
		w := newWebhook(t, db, ws, base, "task.created")
		for range 5 {
			e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base)
			newDeliveries(t, db, e, w)
		}
		now := base.Add(time.Minute)
		a, err := s.ClaimDeliveries(ctx, ports.ClaimRequest{Owner: "a", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 3})
		if err != nil || len(a) != 3 {
			t.Fatalf("claim a: %d %v", len(a), err)
		}
		b, err := s.ClaimDeliveries(ctx, ports.ClaimRequest{Owner: "b", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 3})
		if err != nil || len(b) != 2 {
			t.Fatalf("claim b: %d %v", len(b), err)
		}
		policy := domain.RetryPolicy{Base: time.Second, Max: time.Minute, Window: time.Hour}
		code := 503
		var outs []domain.Outcome
		for i, c := range append(a, b[0]) { // b's delivery is not a's to finish
			res := domain.AttemptResult{StatusCode: 200}
			if i == 1 {
				res = domain.AttemptResult{StatusCode: code, Err: "busy"}
			}
			outs = append(outs, c.Delivery.RecordAttempt(res, now, policy))
		}
		for range 2 { // the second call writes nothing: the leases are gone
			n, _, err := s.FinishDeliveries(ctx, "a", outs)
			if err != nil {
				t.Fatal(err)
			}
			if n != 3 && n != 0 {
				t.Fatalf("finished %d, want 3 then 0", n)
			}
		}
		for _, want := range outs[:3] {
			got, err := s.FindDeliveryByID(ctx, ws.ID, w.ID, want.Delivery.ID)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "finished delivery", got, want.Delivery)
		}
		got, _ := s.FindDeliveryByID(ctx, ws.ID, w.ID, b[0].Delivery.ID)
		equal(t, "b's delivery, untouched", got, b[0].Delivery)
		// The retry scheduled for a's second delivery can be claimed again.
		again, err := s.ClaimDeliveries(ctx, ports.ClaimRequest{Owner: "c", Now: now.Add(time.Hour), LeaseUntil: now.Add(2 * time.Hour), Limit: 10})
		if err != nil || len(again) != 1 || again[0].Delivery.ID != outs[1].Delivery.ID || again[0].Delivery.Attempts != 1 {
			t.Fatalf("claim after finishing: %+v %v", again, err)
		}
	})
}

// A claim takes at most PerWebhook deliveries of one webhook, fewer for
// those given less Room, and still fills its limit from other webhooks:
// the dispatcher need not lease what it would give back at once.
func TestDeliveryStoreClaimsWithinRoom(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Deliveries()
		ws := newWorkspace(t, db)
		a := newWebhook(t, db, ws, base, "task.created")
		b := newWebhook(t, db, ws, base, "task.created")
		c := newWebhook(t, db, ws, base, "task.created")
		for i := range 6 {
			e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base.Add(time.Duration(i)*time.Second))
			newDeliveries(t, db, e, a, b, c)
		}
		now := base.Add(time.Hour)
		claimed, err := s.ClaimDeliveries(ctx, ports.ClaimRequest{
			Owner: "x", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 18,
			PerWebhook: 4, Room: map[string]int{b.ID: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, d := range claimed {
			per[d.Delivery.WebhookID]++
		}
		if per[a.ID] != 4 || per[b.ID] != 1 || per[c.ID] != 4 || len(claimed) != 9 {
			t.Fatalf("claimed per webhook %v (%d in all); want a 4, b 1, c 4", per, len(claimed))
		}
		// What was left out is not leased: another claim gets it.
		rest, err := s.ClaimDeliveries(ctx, ports.ClaimRequest{Owner: "y", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 100})
		if err != nil || len(rest) != 9 {
			t.Fatalf("second claim: %d %v; want the 9 left", len(rest), err)
		}
		for _, d := range rest {
			for _, m := range claimed {
				if d.Delivery.ID == m.Delivery.ID {
					t.Fatalf("%s claimed twice", d.Delivery.ID)
				}
			}
		}
	})
}

// Claims interleave workspaces: each workspace's oldest due delivery comes
// before any workspace's second, at most each workspace's room of the
// claim is taken, and a workspace skipped gives nothing; so one
// workspace's backlog never holds the claim from another's deliveries.
func TestDeliveryClaimInterleavesWorkspaces(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Deliveries()
		busy, quiet := newWorkspace(t, db), newWorkspace(t, db)
		for h := range 3 {
			w := newWebhook(t, db, busy, base, "task.created")
			for i := range 20 {
				e, _ := newEvent(t, db, busy, domain.EventTaskCreated, base.Add(time.Duration(h*20+i)*time.Second))
				newDeliveries(t, db, e, w)
			}
		}
		q := newWebhook(t, db, quiet, base, "task.created")
		for i := range 3 {
			e, _ := newEvent(t, db, quiet, domain.EventTaskCreated, base.Add(time.Hour+time.Duration(i)*time.Second))
			newDeliveries(t, db, e, q)
		}
		now := base.Add(2 * time.Hour)
		count := func(ds []ports.Dispatch) map[string]int {
			per := map[string]int{}
			for _, d := range ds {
				per[d.Delivery.WorkspaceID]++
			}
			return per
		}
		claim := func(owner string, r ports.ClaimRequest) []ports.Dispatch {
			t.Helper()
			r.Owner, r.Now, r.LeaseUntil = owner, now, now.Add(time.Hour)
			got, err := s.ClaimDeliveries(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		// A claim of 4 takes two of each, though the busy workspace's 60
		// are all older than the quiet one's.
		if per := count(claim("a", ports.ClaimRequest{Limit: 4, PerWebhook: 100, PerWorkspace: 100})); per[busy.ID] != 2 || per[quiet.ID] != 2 {
			t.Fatalf("interleaved claim of 4: %v", per)
		}
		// Each workspace's room: the busy one's share is 5 (1 with a lowered
		// room), the quiet one takes its last.
		if per := count(claim("b", ports.ClaimRequest{Limit: 20, PerWebhook: 100, PerWorkspace: 5})); per[busy.ID] != 5 || per[quiet.ID] != 1 {
			t.Fatalf("claim with a room of 5 per workspace: %v", per)
		}
		if per := count(claim("c", ports.ClaimRequest{Limit: 20, PerWebhook: 100, PerWorkspace: 5,
			WorkspaceRoom: map[string]int{busy.ID: 1}})); per[busy.ID] != 1 {
			t.Fatalf("claim with the busy workspace's room lowered to 1: %v", per)
		}
		if got := claim("d", ports.ClaimRequest{Limit: 20, PerWebhook: 100, PerWorkspace: 5, SkipWorkspaces: []string{busy.ID}}); len(got) != 0 {
			t.Fatalf("skipping the busy workspace, with the quiet one's all leased, claimed %v", count(got))
		}
	})
}

// An inactive webhook is claimed its pings only, however many older
// deliveries wait for it to be enabled again (redelivered while it was
// off): they neither go out nor crowd the ping out of its room.
func TestInactiveWebhookIsClaimedItsPingsOnly(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws := newWorkspace(t, db)
		off := newWebhook(t, db, ws, base, "task.created")
		on := newWebhook(t, db, ws, base, "task.created")
		for i := range 3 {
			e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base.Add(time.Duration(i)*time.Second))
			newDeliveries(t, db, e, off, on)
		}
		disabled, _ := off.Disable(domain.DisabledFailing, base.Add(time.Minute))
		if err := db.Webhooks().UpdateWebhook(ctx, disabled); err != nil {
			t.Fatal(err)
		}
		ping, _ := newEvent(t, db, ws, domain.EventWebhookPing, base.Add(2*time.Minute))
		pinged := newDeliveries(t, db, ping, off)[0]
		now := base.Add(time.Hour)
		claimed, err := db.Deliveries().ClaimDeliveries(ctx, ports.ClaimRequest{
			Owner: "x", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10, PerWebhook: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range claimed {
			got = append(got, d.Delivery.WebhookID+"/"+string(d.Delivery.EventType))
			if d.Delivery.WebhookID == off.ID && d.Delivery.ID != pinged.ID {
				t.Fatalf("claimed a delivery of the inactive webhook that is not its ping: %+v", d.Delivery)
			}
		}
		slices.Sort(got)
		want := []string{off.ID + "/webhook.ping", on.ID + "/task.created"}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want %v", got, want)
		}
	})
}
