package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/worktrack/worktrack/core/ports"
)

var _ ports.Exporter = (*DB)(nil)

// SchemaVersion is the newest migration applied to the database.
func (db *DB) SchemaVersion(ctx context.Context) (int64, error) {
	var v sql.NullInt64
	if err := db.sql.QueryRowContext(ctx, "SELECT max(version_id) FROM goose_db_version WHERE is_applied").Scan(&v); err != nil {
		return 0, fmt.Errorf("store: schema version: %w", err)
	}
	return v.Int64, nil
}

// Export reads one consistent snapshot of the database (of one workspace's
// rows when workspaceID is set) and hands every row to e.Record, kind after
// kind in the core's order, as a JSON object. The snapshot is one read
// transaction that blocks no writer: on PostgreSQL REPEATABLE READ READ
// ONLY; on SQLite a deferred transaction, whose first read fixes what it
// sees (WAL). Rows are streamed: memory does not grow with the database.
// Events committed in the last instant and not yet positioned are
// positioned first, so that the file carries their positions.
func (db *DB) Export(ctx context.Context, workspaceID string, e ports.ExportSink) error {
	if _, err := db.Events().PositionEvents(ctx); err != nil {
		return err
	}
	schema, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: export: %w", err)
	}
	defer conn.Close()
	begin, end := "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "COMMIT"
	if db.dialect != DialectPostgres {
		begin = "BEGIN DEFERRED"
	}
	if _, err := conn.ExecContext(ctx, begin); err != nil {
		return fmt.Errorf("store: export: begin: %w", err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), end) }()
	// The snapshot's instant: read inside it (its first statement fixes
	// SQLite's snapshot).
	var now time.Time
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM workspaces").Scan(new(int64)); err != nil {
		return fmt.Errorf("store: export: %w", err)
	}
	now = time.Now().UTC()
	if err := e.Begin(db.dialect, schema, now); err != nil {
		return err
	}
	for i := range transferTables {
		if err := db.exportTable(ctx, conn, &transferTables[i], workspaceID, now, e); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) exportTable(ctx context.Context, conn *sql.Conn, t *transferTable, workspaceID string, now time.Time, e ports.ExportSink) error {
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.name
	}
	q := "SELECT " + strings.Join(names, ", ") + " FROM " + t.from //nolint:gosec // names of transferTables; values are arguments
	var where []string
	var args []any
	if workspaceID != "" {
		where, args = append(where, t.wsFilter), append(args, workspaceID)
	}
	if t.since != "" {
		where, args = append(where, t.since), append(args, Time(now.Add(-24*time.Hour)))
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + t.orderBy(db.dialect)
	if db.dialect == DialectPostgres {
		q = numbered(q)
	}
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("store: export %s: %w", t.table, err)
	}
	defer rows.Close()
	vals := make([]any, len(t.cols))
	ptrs := make([]any, len(t.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	prefix := []byte(`{"kind":"` + string(t.kind) + `"`)
	buf := make([]byte, 0, 1024)
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("store: export %s: %w", t.table, err)
		}
		buf = append(buf[:0], prefix...)
		for i, c := range t.cols {
			buf = append(buf, ',', '"')
			buf = append(buf, c.name...)
			buf = append(buf, '"', ':')
			if buf, err = appendValue(buf, c, vals[i]); err != nil {
				return err
			}
		}
		buf = append(buf, '}')
		if err := e.Record(t.kind, buf); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: export %s: %w", t.table, err)
	}
	return nil
}

// Tables lists the database's tables (and views), for the test that keeps
// transferTables complete.
func (db *DB) Tables(ctx context.Context) ([]string, error) {
	q := "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
	if db.dialect != DialectPostgres {
		q = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY 1"
	}
	rows, err := db.sql.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// TransferTables are the tables a file carries and those it leaves out as
// derived, for that test.
func TransferTables() (carried []string, derived map[string]bool) {
	for _, t := range transferTables {
		carried = append(carried, t.table, t.from)
	}
	return carried, transferDerived
}
