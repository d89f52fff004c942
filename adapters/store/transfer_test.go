package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// Every table of the schema is carried by export files or named as derived
// (rebuilt by an import): a migration that adds a table the export does
// not know fails here, on both databases, until transfer.go says what to
// do with it (docs/export.md#adding-a-table).
func TestExportKnowsEveryTable(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		tables, err := db.Tables(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		carried, derived := store.TransferTables()
		for _, table := range tables {
			if !slices.Contains(carried, table) && !derived[table] {
				t.Errorf("table %s is neither carried by export files nor derived: add it to transferTables or transferDerived", table)
			}
		}
		if len(tables) < 12 {
			t.Fatalf("only %d tables listed: %v", len(tables), tables)
		}
	})
}
