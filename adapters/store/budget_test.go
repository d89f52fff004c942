package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// endless is a statement that runs until it is stopped: PostgreSQL sleeps
// for an hour; SQLite counts for ever, checking its context row by row as
// the task lists and counts do (worktrack_live).
func endless(db *store.DB) (string, []any) {
	if db.Dialect() == store.DialectPostgres {
		return "SELECT count(*) FROM (SELECT pg_sleep(3600)) AS s", nil
	}
	return "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE worktrack_live(?)) SELECT count(*) FROM c",
		[]any{store.LiveArg}
}

// runningEndless counts the endless statements PostgreSQL is running (0 on
// SQLite, which has no such view: there the statement's return shows it
// stopped).
func runningEndless(t *testing.T, db *store.DB) int {
	t.Helper()
	if db.Dialect() != store.DialectPostgres {
		return 0
	}
	var n int
	if err := db.Gorm().Raw(`SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND datname = current_database()
		AND query LIKE '%pg_sleep(3600)%' AND query NOT LIKE '%pg_stat_activity%'`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// waitGone waits until PostgreSQL runs no endless statement any more.
func waitGone(t *testing.T, db *store.DB) {
	t.Helper()
	for i := 0; runningEndless(t, db) > 0; i++ {
		if i == 500 {
			t.Fatal("the stopped statement still runs on the server")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An API statement past its deadline is stopped, on the server too, and
// reads as statement_timeout (503 service_unavailable, counted by its
// limit); one whose context ends (its client went away) is stopped as
// well; a statement under no scope (the administration commands', the
// dispatcher's but its claim: TestAStuckClaimIsStoppedByTheStatementDeadline)
// has no deadline.
func TestStatementDeadline(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		db.SetBudget(store.Budget{StatementTimeout: 300 * time.Millisecond})
		q, args := endless(db)
		ctx := ports.WithDBScope(context.Background(), "wsp_a")
		_, err := db.ReadCount(ctx, q, args...)
		e, ok := domain.AsError(err)
		if !ok || e.Code != domain.CodeUnavailable || e.Limit != domain.LimitStatementTime {
			t.Fatalf("a statement past its deadline: %v, want service_unavailable naming statement_timeout", err)
		}
		waitGone(t, db)
		// The caller's arguments are left as given: reused below, a
		// statement's token in them (forgotten once it ended) would keep
		// SQLite's next statement from seeing its own context end.
		if len(args) > 0 && args[0] != store.LiveArg {
			t.Fatalf("the statement rewrote its caller's arguments: %v", args)
		}

		// A client that goes away: no deadline, the context's end stops it.
		db.SetBudget(store.Budget{})
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := db.ReadCount(cctx, q, args...)
			done <- err
		}()
		for i := 0; db.Dialect() == store.DialectPostgres && runningEndless(t, db) == 0; i++ {
			if i == 500 {
				t.Fatal("the statement never started")
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		if err := <-done; err == nil {
			t.Fatal("a cancelled statement returned no error")
		} else if e, ok := domain.AsError(err); ok && e.Limit == domain.LimitStatementTime {
			t.Fatalf("a client's going away read as the deadline: %v", err)
		}
		waitGone(t, db)

		// Under no scope the deadline does not apply.
		db.SetBudget(store.Budget{StatementTimeout: time.Nanosecond})
		if n, err := db.ReadCount(context.Background(), "SELECT count(*) FROM workspaces"); err != nil || n < 0 {
			t.Fatalf("an unscoped statement: %d, %v", n, err)
		}
		if _, err := db.ReadCount(ctx, "SELECT count(*) FROM workspaces"); err == nil {
			t.Fatal("a scoped statement ran past a deadline of 1ns")
		}
	})
}

// One workspace's statements hold at most its share of the connections:
// beyond it they wait in its own queue, and beyond the queue (or after
// waiting the statement timeout) they are refused naming database_share,
// while another workspace's statements run.
func TestWorkspaceShareOfTheDatabase(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		if db.MaxOpenConns() < 3 {
			t.Skip("needs a pool of 3")
		}
		db.SetBudget(store.Budget{StatementTimeout: time.Hour, WorkspaceShare: 1, WorkspaceQueue: 1})
		q, args := endless(db)
		a := ports.WithDBScope(context.Background(), "wsp_a")
		b := ports.WithDBScope(context.Background(), "wsp_b")
		holding, cancelHolding := context.WithCancel(a)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = db.ReadCount(holding, q, args...)
		}()
		for i := 0; db.Holding("wsp_a") == 0; i++ {
			if i == 500 {
				t.Fatal("the statement never started")
			}
			time.Sleep(10 * time.Millisecond)
		}
		// A's next statement queues behind the first.
		queued := make(chan error, 1)
		go func() {
			_, err := db.ReadCount(a, "SELECT count(*) FROM workspaces")
			queued <- err
		}()
		waitQueued(t, db, "wsp_a", 1)
		// The next finds A's queue full: refused at once, naming the limit.
		_, err := db.ReadCount(a, "SELECT count(*) FROM workspaces")
		if e, ok := domain.AsError(err); !ok || e.Code != domain.CodeTooManyRequests || e.Limit != domain.LimitDatabaseShare {
			t.Fatalf("over the share and the queue: %v, want too_many_requests naming database_share", err)
		}
		// B is served meanwhile, statements and transactions.
		if _, err := db.ReadCount(b, "SELECT count(*) FROM workspaces"); err != nil {
			t.Fatalf("another workspace: %v", err)
		}
		if err := db.InTx(b, func(ctx context.Context) error {
			_, err := db.ReadCount(ctx, "SELECT count(*) FROM workspaces")
			return err
		}); err != nil {
			t.Fatalf("another workspace's transaction: %v", err)
		}
		select {
		case err := <-queued:
			t.Fatalf("A's queued statement ran while A's share was held: %v", err)
		default:
		}
		// A's slot freed, its queued statement runs.
		cancelHolding()
		wg.Wait()
		if err := <-queued; err != nil {
			t.Fatalf("A's queued statement: %v", err)
		}

		// A transaction holds its seat from its start to its end, and a
		// statement waits for one at most the statement timeout.
		db.SetBudget(store.Budget{StatementTimeout: 200 * time.Millisecond, WorkspaceShare: 1, WorkspaceQueue: 5})
		inTx, release := make(chan struct{}), make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = db.InTx(a, func(context.Context) error {
				close(inTx)
				<-release
				return nil
			})
		}()
		<-inTx
		_, err = db.ReadCount(a, "SELECT count(*) FROM workspaces")
		if e, ok := domain.AsError(err); !ok || e.Code != domain.CodeTooManyRequests || e.Limit != domain.LimitDatabaseShare {
			t.Fatalf("waiting past the statement timeout: %v, want too_many_requests naming database_share", err)
		}
		close(release)
		wg.Wait()
		if _, err := db.ReadCount(a, "SELECT count(*) FROM workspaces"); err != nil {
			t.Fatalf("after the transaction: %v", err)
		}

		// What runs inside a transaction, even on GORM's own handle of it
		// (the advisory lock of a limit's count), takes no second slot:
		// with a share of one and no queue it would be refused.
		db.SetBudget(store.Budget{StatementTimeout: time.Minute, WorkspaceShare: 1, WorkspaceQueue: 0})
		if err := db.InTx(a, func(ctx context.Context) error {
			_, err := db.Webhooks().CountWebhooks(ctx, "wsp_a")
			return err
		}); err != nil {
			t.Fatalf("a transaction's own statements: %v", err)
		}
	})
}

// waitQueued waits until n statements of the workspace wait for its share.
func waitQueued(t *testing.T, db *store.DB, workspaceID string, n int) {
	t.Helper()
	for i := 0; db.Waiting(workspaceID) != n; i++ {
		if i == 500 {
			t.Fatalf("%d statements never queued", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holding waits until the workspace holds n seats (no bound of its own:
// the test's deadline is it).
func holding(db *store.DB, workspaceID string, n int) {
	for db.Holding(workspaceID) != n {
		time.Sleep(time.Millisecond)
	}
}

// queuedFor waits until n statements of the workspace wait for seats.
func queuedFor(db *store.DB, workspaceID string, n int) {
	for db.Waiting(workspaceID) != n {
		time.Sleep(time.Millisecond)
	}
}

// The seats are served to workspaces in turn: with every seat held by A
// and A's queue full of statements, B's one statement is seated at the
// first seat freed, before any of A's queue; A's then run in their order.
// Costly work holds seats by its weight.
func TestSeatsServeAnotherWorkspaceBeforeAFloodsQueue(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		if db.MaxOpenConns() < 4 {
			t.Skip("needs a pool of 4")
		}
		db.SetBudget(store.Budget{StatementTimeout: time.Hour, Seats: 2, WorkspaceShare: 2, WorkspaceQueue: 10})
		q, args := endless(db)
		a := ports.WithDBScope(context.Background(), "wsp_a")
		b := ports.WithDBScope(context.Background(), "wsp_b")
		var wg sync.WaitGroup
		first, stopFirst := context.WithCancel(a)
		second, stopSecond := context.WithCancel(a)
		for _, ctx := range []context.Context{first, second} {
			wg.Go(func() { _, _ = db.ReadCount(ctx, q, args...) })
		}
		holding(db, "wsp_a", 2)

		// A's queue: three short statements, in order.
		for i := range 3 {
			wg.Go(func() {
				if _, err := db.ReadCount(a, "SELECT count(*) FROM workspaces"); err != nil {
					t.Errorf("A's statement %d: %v", i+1, err)
				}
			})
			queuedFor(db, "wsp_a", i+1)
		}
		// B's one statement, endless, so that who holds the freed seat
		// stays to be seen.
		bctx, stopB := context.WithCancel(b)
		wg.Go(func() { _, _ = db.ReadCount(bctx, q, args...) })
		queuedFor(db, "wsp_b", 1)

		stopFirst()
		for db.SeatStats().Waiting != 3 {
			time.Sleep(time.Millisecond)
		}
		if held, queued := db.Holding("wsp_b"), db.Waiting("wsp_a"); held != 1 || queued != 3 {
			t.Fatalf("the first seat freed: B holds %d, A has %d waiting; want B's statement seated before A's queue of 3", held, queued)
		}
		stopB()
		queuedFor(db, "wsp_a", 0) // A's queue runs on the seat B freed

		// A search's weight holds two seats: alone, it holds both.
		search, stopSearch := context.WithCancel(ports.WithDBWeight(a, domain.SearchWeight))
		stopSecond()
		holding(db, "wsp_a", 0)
		wg.Go(func() { _, _ = db.ReadCount(search, q, args...) })
		holding(db, "wsp_a", 2)
		if st := db.SeatStats(); st.InUse != 2 || st.Capacity != 2 {
			t.Fatalf("a search alone: %+v, want both seats in use", st)
		}
		stopSearch()
		wg.Wait()
		if st := db.SeatStats(); st.InUse != 0 || st.Waiting != 0 || st.Flows != 0 {
			t.Fatalf("at the end: %+v, want every seat back", st)
		}
	})
}

// holdWriter starts a transaction of workspace wsp_a on SQLite, under wg,
// and returns once it holds the writer; release (safe to call twice) ends
// it.
func holdWriter(db *store.DB, wg *sync.WaitGroup) (release func()) {
	inTx, done := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		_ = db.InTx(ports.WithDBScope(context.Background(), "wsp_a"), func(context.Context) error {
			close(inTx)
			<-done
			return nil
		})
	})
	<-inTx
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// On SQLite, whose writer is one, write transactions queue by workspace
// and are served in turn: B's one write goes before A's queued bulk
// writes, not after them all.
func TestSQLiteWritesAreServedInTurn(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	a := ports.WithDBScope(context.Background(), "wsp_a")
	b := ports.WithDBScope(context.Background(), "wsp_b")
	var wg sync.WaitGroup
	release := holdWriter(db, &wg)
	var mu sync.Mutex
	var order []string
	write := func(ctx context.Context, name string) {
		wg.Go(func() {
			if err := db.InTx(ctx, func(ctx context.Context) error {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return nil
			}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	for i, name := range []string{"a1", "a2", "a3"} {
		write(a, name)
		for db.QueuedWrites("wsp_a") != i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	write(b, "b")
	for db.QueuedWrites("wsp_b") != 1 {
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()
	if want := []string{"b", "a1", "a2", "a3"}; !slices.Equal(order, want) {
		t.Fatalf("wrote %v, want %v", order, want)
	}
}

// Seats come back on every path: a statement that fails, one whose
// context ends while it runs or while it waits, a transaction that fails
// or panics.
func TestSeatsComeBackOnEveryPath(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		db.SetBudget(store.Budget{StatementTimeout: time.Hour, Seats: 2, WorkspaceShare: 1, WorkspaceQueue: 10})
		a := ports.WithDBScope(context.Background(), "wsp_a")
		if _, err := db.ReadCount(a, "SELECT count(*) FROM no_such_table"); err == nil {
			t.Fatal("a statement on no table did not fail")
		}
		q, args := endless(db)
		running, stop := context.WithCancel(a)
		done := make(chan error, 1)
		go func() { _, err := db.ReadCount(running, q, args...); done <- err }()
		holding(db, "wsp_a", 1)
		waiting, stopWaiting := context.WithCancel(a)
		waited := make(chan error, 1)
		go func() { _, err := db.ReadCount(waiting, "SELECT count(*) FROM workspaces"); waited <- err }()
		queuedFor(db, "wsp_a", 1)
		stopWaiting()
		if err := <-waited; err == nil {
			t.Fatal("a statement whose context ended while it waited ran")
		}
		stop()
		if err := <-done; err == nil {
			t.Fatal("a statement whose context ended while it ran returned no error")
		}
		failed := errors.New("rolled back")
		if err := db.InTx(a, func(context.Context) error { return failed }); !errors.Is(err, failed) {
			t.Fatalf("a failing transaction: %v", err)
		}
		func() {
			defer func() { _ = recover() }()
			_ = db.InTx(a, func(context.Context) error { panic("in a transaction") })
		}()
		if st := db.SeatStats(); st.InUse != 0 || st.Waiting != 0 || st.Flows != 0 {
			t.Fatalf("after every path: %+v, want every seat back", st)
		}
		// And the workspace's next statement runs at once.
		if _, err := db.ReadCount(a, "SELECT count(*) FROM workspaces"); err != nil {
			t.Fatal(err)
		}
	})
}

// On SQLite the dispatcher's claim waits for the writer in a turn of its
// own, not behind the dispatcher's other writes (its records of attempts,
// which have no workspace): with the writer held and two such writes
// queued, the claim leases its delivery before the second of them runs.
func TestSQLiteClaimHasATurnOfItsOwn(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	ws := newWorkspace(t, db)
	w := newWebhook(t, db, ws, base, "task.created")
	e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base)
	newDeliveries(t, db, e, w)

	var wg sync.WaitGroup
	release := holdWriter(db, &wg)
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				release()
				t.Fatalf("never: %s", what)
			}
		}
	}
	const owner = "dsp_turn"
	leased := func(ctx context.Context) (int64, error) {
		return db.ReadCount(ctx, "SELECT count(*) FROM webhook_deliveries WHERE locked_by = ?", owner)
	}
	var mu sync.Mutex
	seen := map[string]int64{}
	for i, name := range []string{"first", "second"} {
		wg.Go(func() {
			if err := db.InTx(context.Background(), func(ctx context.Context) error {
				n, err := leased(ctx)
				mu.Lock()
				seen[name] = n
				mu.Unlock()
				return err
			}); err != nil {
				t.Errorf("%s write: %v", name, err)
			}
		})
		eventually(fmt.Sprintf("%d writes of no workspace queued", i+1), func() bool { return db.QueuedWrites("") == i+1 })
	}
	claimed := make(chan []ports.Dispatch, 1)
	wg.Go(func() {
		got, err := db.Deliveries().ClaimDeliveries(context.Background(), ports.ClaimRequest{
			Owner: owner, Now: base.Add(time.Hour), LeaseUntil: base.Add(2 * time.Hour), Limit: 10})
		if err != nil {
			t.Errorf("claim: %v", err)
		}
		claimed <- got
	})
	eventually("the claim queued in its own turn", func() bool { return db.QueuedWrites(store.ClaimFlow) == 1 })
	release()
	wg.Wait()
	if got := <-claimed; len(got) != 1 {
		t.Fatalf("claimed %d deliveries, want 1", len(got))
	}
	if seen["first"] != 0 || seen["second"] != 1 {
		t.Fatalf("deliveries leased when the writes ran: %v; want the claim between them (first 0, second 1)", seen)
	}
}

// On SQLite a claim with nothing to lease (every due delivery's workspace
// at its cap, or nothing due) answers without waiting for the writer,
// which another workspace's transaction holds; once there is something to
// lease, it waits for the writer and leases it.
func TestSQLiteClaimWithNothingToLeaseDoesNotWait(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	ws := newWorkspace(t, db)
	w := newWebhook(t, db, ws, base, "task.created")
	e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base)
	newDeliveries(t, db, e, w)

	var wg sync.WaitGroup
	defer wg.Wait()
	release := holdWriter(db, &wg)
	defer release()
	claim := func(r ports.ClaimRequest) <-chan []ports.Dispatch {
		out := make(chan []ports.Dispatch, 1)
		r.Owner, r.LeaseUntil, r.Limit = "dsp_idle", base.Add(2*time.Hour), 10
		wg.Go(func() {
			got, err := db.Deliveries().ClaimDeliveries(context.Background(), r)
			if err != nil {
				t.Errorf("claim: %v", err)
			}
			out <- got
		})
		return out
	}
	for name, r := range map[string]ports.ClaimRequest{
		"its workspace at its cap": {Now: base.Add(time.Hour), SkipWorkspaces: []string{ws.ID}},
		"its webhook at its cap":   {Now: base.Add(time.Hour), SkipWebhooks: []string{w.ID}},
		"nothing due yet":          {Now: base.Add(-time.Hour)},
	} {
		select {
		case got := <-claim(r):
			if len(got) != 0 {
				t.Fatalf("%s: claimed %d", name, len(got))
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the claim waited for the writer", name)
		}
		if q := db.QueuedWrites(store.ClaimFlow); q != 0 {
			t.Fatalf("%s: %d claims queued for the writer", name, q)
		}
	}
	due := claim(ports.ClaimRequest{Now: base.Add(time.Hour)})
	for deadline := time.Now().Add(30 * time.Second); db.QueuedWrites(store.ClaimFlow) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a claim with a delivery due never queued for the writer")
		}
	}
	release()
	if got := <-due; len(got) != 1 {
		t.Fatalf("claimed %d once the writer was free, want 1", len(got))
	}
}
