package store_test

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// A page of the log costs the same at any depth: each filter's query walks
// an index in log order from the resume point, with no sort and no scan of
// what came before. (Checked on PostgreSQL's plans, with sequential scans
// off so that a small table does not hide a missing index.)
func TestEventLogPagesUseAnIndexInLogOrder(t *testing.T) {
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
