package store_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

// A page of the log costs the same at any depth: each filter's query walks
// an index in log order from the resume point, with no sort and no scan of
// what came before. (Checked on PostgreSQL's plans, with sequential scans
// off so that a small table does not hide a missing index.)
func TestEventLogPagesUseAnIndexInLogOrder(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	for name, where := range map[string]string{
		"all":     "",
		"type":    " AND type = 'task.created'",
		"project": " AND project_id = 'prj_x'",
	} {
		var plan []string
		err := db.Gorm().Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
				return err
			}
			return tx.Raw("EXPLAIN SELECT * FROM events WHERE workspace_id = 'wsp_x' AND seq IS NOT NULL AND seq > 1000" +
				where + " ORDER BY seq LIMIT 21").Scan(&plan).Error
		})
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Sort") || !strings.Contains(text, "events_workspace_") {
			t.Errorf("%s: the page is not read from an index in log order:\n%s", name, text)
		}
	}
}

// The sequencer reads the events it has still to position by the partial
// index that holds only those, in the order it positions them (groups of
// events recorded together by their group's number): pings, which are never
// positioned, are not in it, so however many there are, no run steps over
// them.
func TestSequencerReadsOnlyWhatItHasToPosition(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	var plan []string
	err := db.Gorm().Transaction(func(tx *gorm.DB) error {
		// An empty table's plan would sort a bitmap scan's few rows; with
		// both off the planner shows whether an index gives the order.
		if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
			return err
		}
		if err := tx.Exec("SET LOCAL enable_bitmapscan = off").Error; err != nil {
			return err
		}
		return tx.Raw("EXPLAIN "+store.Numbered(store.ToPosition(store.DialectPostgres)), 500).Scan(&plan).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if strings.Contains(text, "Sort") || !strings.Contains(text, "events_unpositioned_idx") {
		t.Errorf("the sequencer's read is not a scan of events_unpositioned_idx:\n%s", text)
	}
	var def string
	if err := db.Gorm().Raw("SELECT indexdef FROM pg_indexes WHERE indexname = 'events_unpositioned_idx' AND schemaname = current_schema()").
		Scan(&def).Error; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "'webhook.ping'") {
		t.Errorf("events_unpositioned_idx holds pings: %s", def)
	}
}

// events_seq_idx holds positions only. While it held an entry for every
// unpositioned event (seq null), the planner could read the sequencer's
// "seq IS NULL" from it by bitmap scan, which never marks the entries of
// dead row versions dead: under make load's creates it did, and every
// sequencer run read every event positioned since the table's last vacuum
// (1,400 heap pages for 30 events after 12,000 creates).
func TestThePositionsIndexHoldsNoUnpositionedEvent(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	var def string
	if err := db.Gorm().Raw("SELECT indexdef FROM pg_indexes WHERE indexname = 'events_seq_idx' AND schemaname = current_schema()").
		Scan(&def).Error; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "UNIQUE") || !strings.Contains(def, "WHERE (seq IS NOT NULL)") {
		t.Errorf("events_seq_idx: %s; want unique positions, without the unpositioned events", def)
	}
}

// Events created together take consecutive log positions, in the order
// given, while other transactions create events beside them: on PostgreSQL
// a multi-row INSERT draws its inserted numbers row by row, between other
// sessions' numbers, so only the group's own number keeps it together.
func TestEventsCreatedTogetherTakeConsecutivePositions(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ws := newWorkspace(t, db)
		ctx := context.Background()
		const writers, groups, size = 6, 8, 200
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		var mu sync.Mutex
		var made [][]string // the ids of each group, in the order given
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for g := range groups {
					n := size
					if (w+g)%2 == 1 {
						n = 1 // single events between the groups
					}
					es := make([]domain.Event, n)
					payloads := make([][]byte, n)
					ids := make([]string, n)
					for i := range es {
						es[i] = domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ws.ID, Type: domain.EventTaskCreated, CreatedAt: base}
						payloads[i] = []byte(`{}`)
						ids[i] = es[i].ID
					}
					if err := db.InTx(ctx, func(ctx context.Context) error {
						_, err := db.Events().CreateEvents(ctx, es, payloads)
						return err
					}); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					made = append(made, ids)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for {
			n, err := db.Events().PositionEvents(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		logged, err := db.Events().ReadLog(ctx, 0, writers*groups*size)
		if err != nil {
			t.Fatal(err)
		}
		seq := make(map[string]int64, len(logged))
		for _, e := range logged {
			seq[e.ID] = e.Seq
		}
		for _, ids := range made {
			for i, id := range ids {
				if seq[id] == 0 {
					t.Fatalf("event %s was never positioned", id)
				}
				if i > 0 && seq[id] != seq[ids[i-1]]+1 {
					t.Fatalf("a group of %d events is not consecutive in the log: item %d at %d, item %d at %d",
						len(ids), i-1, seq[ids[i-1]], i, seq[id])
				}
			}
		}
	})
}

// The interleaving that test can only hope to meet, made certain: a trigger
// inserts another event while the group's INSERT is between its first and
// second rows, so that event's inserted number falls between theirs, as a
// concurrent transaction's can. The group stays consecutive, the other
// event after it.
func TestAGroupStaysConsecutiveAroundAnotherEventsNumber(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	ctx := context.Background()
	ws := newWorkspace(t, db)
	if err := db.Gorm().Exec(`CREATE FUNCTION interleave() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF convert_from(NEW.payload, 'UTF8') LIKE 'evt_%' THEN
        INSERT INTO events (id, workspace_id, type, created_at, payload)
        VALUES (convert_from(NEW.payload, 'UTF8'), NEW.workspace_id, NEW.type, NEW.created_at, convert_to('{}', 'UTF8'));
    END IF;
    RETURN NEW;
END $$`).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm().Exec("CREATE TRIGGER interleave BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION interleave()").Error; err != nil {
		t.Fatal(err)
	}
	other := domain.NewID(domain.PrefixEvent)
	es := make([]domain.Event, 3)
	for i := range es {
		es[i] = domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ws.ID, Type: domain.EventTaskCreated, CreatedAt: base}
	}
	payloads := [][]byte{[]byte(other), []byte(`{}`), []byte(`{}`)}
	if err := db.InTx(ctx, func(ctx context.Context) error {
		_, err := db.Events().CreateEvents(ctx, es, payloads)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var inserted []int64
	if err := db.Gorm().Raw("SELECT inserted FROM events WHERE id IN (?, ?, ?) ORDER BY inserted", es[0].ID, other, es[1].ID).
		Scan(&inserted).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := db.Events().PositionEvents(ctx); err != nil {
		t.Fatal(err)
	}
	logged, err := db.Events().ReadLog(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range logged {
		order = append(order, e.ID)
	}
	want := []string{es[0].ID, es[1].ID, es[2].ID, other}
	if !slices.Equal(order, want) {
		t.Fatalf("log order %v, want the group first and whole %v (inserted numbers %v)", order, want, inserted)
	}
}

// A sequencer run takes the oldest events up to its batch, but never part
// of a group: were it to stop inside a group, an event committed between
// two runs with an older number would land between the group's halves.
// Here 4,900 single events and a group of 200 wait, one run's batch being
// 5,000, while a transaction that drew its number before them all is still
// open.
func TestASequencerRunTakesAGroupWhole(t *testing.T) {
	t.Parallel()
	db := storetest.Postgres(t)
	ctx := context.Background()
	ws := newWorkspace(t, db)
	event := func() domain.Event {
		return domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ws.ID, Type: domain.EventTaskCreated, CreatedAt: base}
	}
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	late := event()
	go func() {
		done <- db.InTx(ctx, func(ctx context.Context) error {
			_, err := db.Events().CreateEvents(ctx, []domain.Event{late}, [][]byte{[]byte(`{}`)})
			close(held)
			if err != nil {
				return err
			}
			<-release
			return nil
		})
	}()
	<-held
	if err := db.Gorm().Exec(`INSERT INTO events (id, workspace_id, type, created_at, payload)
		SELECT 'evt_single' || lpad(g::text, 12, '0'), ?, 'task.created', now(), convert_to('{}', 'UTF8')
		FROM generate_series(1, 4900) AS g`, ws.ID).Error; err != nil {
		t.Fatal(err)
	}
	group := make([]domain.Event, 200)
	payloads := make([][]byte, len(group))
	ids := make([]string, len(group))
	for i := range group {
		group[i], payloads[i] = event(), []byte(`{}`)
		ids[i] = group[i].ID
	}
	if err := db.InTx(ctx, func(ctx context.Context) error {
		_, err := db.Events().CreateEvents(ctx, group, payloads)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Events().PositionEvents(ctx); err != nil || n != 5100 {
		t.Fatalf("the first run positioned %d events (%v), want the 4,900 singles and the whole group", n, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := db.Events().PositionEvents(ctx); err != nil {
		t.Fatal(err)
	}
	var span struct{ Lo, Hi, N int64 }
	if err := db.Gorm().Raw("SELECT min(seq) AS lo, max(seq) AS hi, count(seq) AS n FROM events WHERE id IN ?", ids).Scan(&span).Error; err != nil {
		t.Fatal(err)
	}
	if span.N != 200 || span.Hi-span.Lo != 199 {
		t.Fatalf("the group's positions run from %d to %d (%d positioned): not consecutive", span.Lo, span.Hi, span.N)
	}
}
