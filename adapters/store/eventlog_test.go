package store_test

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
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
// index that holds only those, in insertion order: pings, which are never
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
		return tx.Raw("EXPLAIN SELECT id FROM events WHERE " + store.Unpositioned + " ORDER BY inserted LIMIT 500").Scan(&plan).Error
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
