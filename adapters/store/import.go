package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

var _ ports.Importer = (*DB)(nil)

// importBatch is how many rows one COPY (PostgreSQL) or a group of INSERTs
// (SQLite) writes.
const importBatch = 2000

// importTx is one dialect's way of writing an import's rows in its
// transaction.
type importTx interface {
	insert(ctx context.Context, t *transferTable, cols []string, rows [][]any) error
	query(ctx context.Context, q string, args ...any) ([][]any, error)
	exec(ctx context.Context, q string, args ...any) error
}

// Import loads src in one transaction (docs/export.md#importing): on
// PostgreSQL a transaction on one pgx connection with COPY for the rows; on
// SQLite one IMMEDIATE transaction of multi-row INSERTs. Anything refused
// rolls everything back.
func (db *DB) Import(ctx context.Context, mode ports.ImportMode, src ports.ImportSource,
	seal func(string, domain.AuditHead, map[domain.ExportKind]int64) (domain.AuditEvent, domain.AuditHead)) (ports.ImportResult, error) {
	var res ports.ImportResult
	run := func(tx importTx) error {
		var err error
		res, err = db.importInto(ctx, tx, mode, src, seal)
		return err
	}
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("store: import: %w", err)
	}
	defer conn.Close()
	if db.dialect == DialectPostgres {
		err = conn.Raw(func(driverConn any) error {
			pc := driverConn.(*stdlib.Conn).Conn()
			return pgx.BeginFunc(ctx, pc, func(tx pgx.Tx) error {
				if mode != ports.ImportIntoEmpty {
					return run(pgImport{tx})
				}
				return withIndexesBuiltAfter(ctx, tx, func() error { return run(pgImport{tx}) })
			})
		})
		return res, err
	}
	release, err := db.takeWriter(ctx)
	if err != nil {
		return res, err
	}
	defer release()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return res, fmt.Errorf("store: import: begin: %w", err)
	}
	if err := run(sqliteImport{conn}); err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return res, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return res, fmt.Errorf("store: import: commit: %w", err)
	}
	return res, nil
}

// pending is one batch of one kind's rows, with each row's line.
type pending struct {
	t     *transferTable
	cols  []string
	rows  [][]any
	lines []int64
	keys  []string // the rows' ids, for the conflict check
}

func (db *DB) importInto(ctx context.Context, tx importTx, mode ports.ImportMode, src ports.ImportSource,
	seal func(string, domain.AuditHead, map[domain.ExportKind]int64) (domain.AuditEvent, domain.AuditHead)) (ports.ImportResult, error) {
	h := src.Header()
	res := ports.ImportResult{Counts: map[domain.ExportKind]int64{}, Repositioned: mode == ports.ImportMergeWorkspace}
	// What the database must hold, or not, before anything is written.
	switch mode {
	case ports.ImportIntoEmpty:
		n, err := countRows(ctx, tx, "SELECT count(*) FROM workspaces")
		if err != nil {
			return res, err
		}
		if n > 0 {
			return res, &domain.ExportError{Reason: fmt.Sprintf("the database holds %d workspaces: --into-empty needs an empty (migrated) database; use --merge-workspace to add one workspace to it", n)}
		}
	case ports.ImportMergeWorkspace:
		if h.Workspace == nil {
			return res, &domain.ExportError{Line: 1, Reason: "--merge-workspace takes a file of one workspace (worktrack export --workspace wsp_…); this one holds the whole database"}
		}
		n, err := countRows(ctx, tx, db.placeholders("SELECT count(*) FROM workspaces WHERE id = ?"), *h.Workspace)
		if err != nil {
			return res, err
		}
		if n > 0 {
			return res, &domain.ExportError{Line: 1, Reason: fmt.Sprintf("the database holds workspace %s already", *h.Workspace)}
		}
	}

	perWorkspace := map[string]map[domain.ExportKind]int64{}
	projectCounts := map[string][4]int64{}
	var heads = map[string]bool{}
	// One goroutine writes the batches, in order, while this one reads
	// and converts the next: the file's parsing and the database's work
	// overlap. Only the writer uses tx until it is done.
	batches := make(chan *pending, 1)
	written := make(chan error, 1)
	var failed atomic.Bool
	go func() {
		var err error
		for b := range batches {
			if err == nil {
				if err = db.writeBatch(ctx, tx, b, mode); err != nil {
					failed.Store(true)
				}
			}
		}
		written <- err
	}()
	// finish waits for the writer: its error comes first, being of earlier
	// lines than any the reader met since.
	finish := func(readErr error) error {
		close(batches)
		if err := <-written; err != nil {
			return err
		}
		return readErr
	}
	var b *pending
	for {
		rec, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, finish(err)
		}
		t := transferTableOf(rec.Kind)
		if b == nil || b.t != t || len(b.rows) >= importBatch {
			if b != nil && len(b.rows) > 0 {
				batches <- b
			}
			if failed.Load() {
				return res, finish(nil)
			}
			b = &pending{t: t, cols: columnNames(t), rows: make([][]any, 0, importBatch)}
		}
		row, err := db.importRow(t, rec, mode)
		if err != nil {
			return res, finish(err)
		}
		b.rows = append(b.rows, row)
		b.lines = append(b.lines, rec.Line)
		key := rec.Str("id")
		if t.kind == domain.ExportAuditHead {
			key = rec.Str("workspace_id")
			heads[key] = true
		}
		b.keys = append(b.keys, key)
		if t.kind == domain.ExportProject {
			var c [4]int64
			for i, name := range t.zeroOnImport {
				_ = json.Unmarshal(rec.Fields[name], &c[i])
			}
			projectCounts[rec.Str("id")] = c
		}
		ws := rec.Str("workspace_id")
		if rec.Kind == domain.ExportWorkspace {
			ws = rec.Str("id")
			res.Workspaces = append(res.Workspaces, ws)
		}
		if ws != "" {
			if perWorkspace[ws] == nil {
				perWorkspace[ws] = map[domain.ExportKind]int64{}
			}
			perWorkspace[ws][rec.Kind]++
		}
		res.Counts[rec.Kind]++
	}
	if b != nil && len(b.rows) > 0 {
		batches <- b
	}
	if err := finish(nil); err != nil {
		return res, err
	}
	if mode == ports.ImportMergeWorkspace && !slices.Contains(res.Workspaces, *h.Workspace) {
		return res, &domain.ExportError{Reason: "the file holds no record of its workspace"}
	}

	// The counts the file carried are what the tasks make them.
	if err := db.checkProjectCounts(ctx, tx, projectCounts); err != nil {
		return res, err
	}
	// Positions: a whole database's events keep theirs, and the sequence
	// goes on after the last; a merged workspace's were written without
	// positions, in their order, and the sequencer positions them after
	// the target's.
	if mode == ports.ImportIntoEmpty {
		if err := tx.exec(ctx, "UPDATE event_sequence SET last = (SELECT coalesce(max(seq), 0) FROM events) WHERE id = 1"); err != nil {
			return res, fmt.Errorf("store: import: event sequence: %w", err)
		}
	}
	// Each imported workspace's audit chain records the import.
	for _, ws := range res.Workspaces {
		head := domain.AuditHead{WorkspaceID: ws}
		if heads[ws] {
			rows, err := tx.query(ctx, db.placeholders("SELECT seq, hash, last_at, pruned_seq, pruned_hash FROM audit_heads WHERE workspace_id = ?"), ws)
			if err != nil {
				return res, fmt.Errorf("store: import: audit head of %s: %w", ws, err)
			}
			if len(rows) != 1 {
				return res, fmt.Errorf("store: import: audit head of %s: %d rows", ws, len(rows))
			}
			r := rows[0]
			head.Seq, head.Hash, head.PrunedSeq, head.PrunedHash = asInt(r[0]), asString(r[1]), asInt(r[3]), asString(r[4])
			if t, ok, _ := scanTime(r[2]); ok {
				head.LastAt = t
			}
		}
		rec, next := seal(ws, head, perWorkspace[ws])
		if err := db.appendImported(ctx, tx, rec, next, heads[ws]); err != nil {
			return res, err
		}
	}
	return res, nil
}

func columnNames(t *transferTable) []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		out[i] = c.name
	}
	return out
}

// importRow is a record's values in its table's column order, checked for
// type; a merged workspace's events lose their positions, and projects'
// counts start at zero (the tasks count them again).
func (db *DB) importRow(t *transferTable, rec domain.ExportRecord, mode ports.ImportMode) ([]any, error) {
	row := make([]any, len(t.cols))
	for i, c := range t.cols {
		raw := rec.Fields[c.name]
		if t.kind == domain.ExportEvent && c.name == "seq" && mode == ports.ImportMergeWorkspace {
			raw = nil
		}
		if slices.Contains(t.zeroOnImport, c.name) {
			raw = json.RawMessage("0")
		}
		v, err := importValue(c, raw, db.dialect)
		if err != nil {
			return nil, &domain.ExportError{Line: rec.Line, Reason: fmt.Sprintf("a %s record: %v", t.kind, err)}
		}
		row[i] = v
	}
	for name := range rec.Fields {
		if !slices.ContainsFunc(t.cols, func(c transferCol) bool { return c.name == name }) {
			return nil, &domain.ExportError{Line: rec.Line, Reason: fmt.Sprintf("a %s record holds %q, which this binary does not know", t.kind, name)}
		}
	}
	return row, nil
}

// writeBatch checks b for conflicts and writes it.
func (db *DB) writeBatch(ctx context.Context, tx importTx, b *pending, mode ports.ImportMode) error {
	if err := db.checkConflicts(ctx, tx, b, mode); err != nil {
		return err
	}
	if err := tx.insert(ctx, b.t, b.cols, b.rows); err != nil {
		if line, key, ok := duplicateOf(err, b); ok {
			return &domain.ExportError{Line: line, Reason: fmt.Sprintf("%s %s is in the file twice", b.t.kind, key)}
		}
		return &domain.ExportError{Line: b.lines[0], Reason: fmt.Sprintf("the %s records of lines %d to %d were refused: %v",
			b.t.kind, b.lines[0], b.lines[len(b.lines)-1], conflictReason(err))}
	}
	return nil
}

// duplicateOf is the line and key of b's row whose key PostgreSQL found
// taken (a unique violation naming it, "Key (id)=(…) already exists.").
func duplicateOf(err error, b *pending) (int64, string, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return 0, "", false
	}
	_, after, ok := strings.Cut(pgErr.Detail, ")=(")
	key, _, ok2 := strings.Cut(after, ")")
	if !ok || !ok2 {
		return 0, "", false
	}
	if i := slices.Index(b.keys, key); i >= 0 {
		return b.lines[i], key, true
	}
	return 0, "", false
}

// checkConflicts refuses a batch holding an id twice, or (but into an
// empty database, which held none of them when the import began: the
// insert's unique constraints catch an id earlier batches wrote) one the
// database holds already, naming the line.
func (db *DB) checkConflicts(ctx context.Context, tx importTx, b *pending, mode ports.ImportMode) error {
	seen := make(map[string]int, len(b.keys))
	for i, k := range b.keys {
		if k == "" {
			continue
		}
		if j, dup := seen[k]; dup {
			return &domain.ExportError{Line: b.lines[i], Reason: fmt.Sprintf("%s %s is in the file twice (line %d too)", b.t.kind, k, b.lines[j])}
		}
		seen[k] = i
	}
	if mode == ports.ImportIntoEmpty {
		return nil
	}
	keyCol := "id"
	switch b.t.kind {
	case domain.ExportIdempotency:
		return nil // a composite key: the insert's constraint answers
	case domain.ExportAuditHead:
		keyCol = "workspace_id"
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	for start := 0; start < len(keys); start += 1000 {
		chunk := keys[start:min(start+1000, len(keys))]
		q := "SELECT " + keyCol + " FROM " + b.t.table + " WHERE " + keyCol + " IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ") + ")"
		args := make([]any, len(chunk))
		for i, k := range chunk {
			args[i] = k
		}
		rows, err := tx.query(ctx, db.placeholders(q), args...)
		if err != nil {
			return fmt.Errorf("store: import: conflicts: %w", err)
		}
		if len(rows) > 0 {
			id := asString(rows[0][0])
			return &domain.ExportError{Line: b.lines[seen[id]], Reason: fmt.Sprintf("%s %s exists in the database already", b.t.kind, id)}
		}
	}
	return nil
}

// checkProjectCounts compares the projects' counts after the import with
// those the file carried.
func (db *DB) checkProjectCounts(ctx context.Context, tx importTx, want map[string][4]int64) error {
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	for start := 0; start < len(ids); start += 1000 {
		chunk := ids[start:min(start+1000, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := tx.query(ctx, db.placeholders("SELECT id, open_count, in_progress_count, done_count, archived_count FROM projects_counted WHERE id IN ("+
			strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ")+")"), args...)
		if err != nil {
			return fmt.Errorf("store: import: project counts: %w", err)
		}
		for _, r := range rows {
			got := [4]int64{asInt(r[1]), asInt(r[2]), asInt(r[3]), asInt(r[4])}
			if id := asString(r[0]); got != want[id] {
				return &domain.ExportError{Reason: fmt.Sprintf("project %s counts %v by status in the file, its tasks make %v: the file is inconsistent", id, want[id], got)}
			}
		}
	}
	return nil
}

// appendImported appends the import's audit record and moves the head.
func (db *DB) appendImported(ctx context.Context, tx importTx, e domain.AuditEvent, head domain.AuditHead, hadHead bool) error {
	row, err := auditToRow(e)
	if err != nil {
		return err
	}
	t := transferTableOf(domain.ExportAuditEvent)
	vals := map[string]any{
		"id": row.ID, "workspace_id": row.WorkspaceID, "seq": row.Seq, "action": row.Action, "actor_type": row.ActorType,
		"actor_user_id": row.ActorUserID, "actor_api_key_id": row.ActorAPIKeyID, "actor_ip": row.ActorIP,
		"actor_user_agent": row.ActorUserAgent, "target_type": row.TargetType, "target_id": row.TargetID, "changes": row.Changes,
		"request_id": row.RequestID, "prev_hash": row.PrevHash, "hash": row.Hash,
	}
	out := make([]any, len(t.cols))
	for i, c := range t.cols {
		v := vals[c.name]
		if p, ok := v.(*string); ok {
			if p == nil {
				v = nil
			} else {
				v = *p
			}
		}
		out[i] = v
	}
	out[slices.IndexFunc(t.cols, func(c transferCol) bool { return c.name == "created_at" })], _ = importValue(
		transferCol{name: "created_at", typ: colTime}, json.RawMessage(`"`+domain.FormatTime(e.CreatedAt)+`"`), db.dialect)
	if err := tx.insert(ctx, t, columnNames(t), [][]any{out}); err != nil {
		return fmt.Errorf("store: import: audit record: %w", err)
	}
	last, _ := importValue(transferCol{name: "last_at", typ: colTime}, json.RawMessage(`"`+domain.FormatTime(head.LastAt)+`"`), db.dialect)
	q := "UPDATE audit_heads SET seq = ?, hash = ?, last_at = ? WHERE workspace_id = ?"
	args := []any{head.Seq, head.Hash, last, head.WorkspaceID}
	if !hadHead {
		q = "INSERT INTO audit_heads (seq, hash, last_at, workspace_id) VALUES (?, ?, ?, ?)"
	}
	if err := tx.exec(ctx, db.placeholders(q), args...); err != nil {
		return fmt.Errorf("store: import: audit head: %w", err)
	}
	return nil
}

// placeholders numbers q's ? for PostgreSQL.
func (db *DB) placeholders(q string) string {
	if db.dialect == DialectPostgres {
		return numbered(q)
	}
	return q
}

func countRows(ctx context.Context, tx importTx, q string, args ...any) (int64, error) {
	rows, err := tx.query(ctx, q, args...)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return asInt(rows[0][0]), nil
}

func asInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int32:
		return int64(n)
	case int:
		return int64(n)
	}
	return 0
}

func asString(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		return string(s)
	}
	return ""
}

// conflictReason says why the database refused rows, without SQL.
func conflictReason(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return "a row with the same key exists already (" + pgErr.Detail + ")"
		case "23503":
			return "a row refers to one the file and the database do not hold (" + pgErr.Detail + ")"
		}
		return pgErr.Message
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "UNIQUE constraint failed"):
		return "a row with the same key exists already (" + msg[strings.Index(msg, "UNIQUE"):] + ")"
	case strings.Contains(msg, "FOREIGN KEY constraint failed"):
		return "a row refers to one the file and the database do not hold"
	}
	return msg
}

// pgImport writes an import's rows with COPY, in the pgx transaction.
type pgImport struct{ tx pgx.Tx }

func (p pgImport) insert(ctx context.Context, t *transferTable, cols []string, rows [][]any) error {
	if t.kind == domain.ExportTask {
		cols, rows = withSearch(cols, rows)
	}
	_, err := p.tx.CopyFrom(ctx, pgx.Identifier{t.table}, cols, pgx.CopyFromRows(rows))
	return err
}

// bulkTables are the tables an import into an empty PostgreSQL database
// loads without their indexes (withIndexesBuiltAfter): those that grow with
// a workspace's work.
var bulkTables = []string{"tasks", "events", "webhook_deliveries", "audit_events"}

// withIndexesBuiltAfter runs load in tx with the bulk tables' secondary
// indexes dropped, and builds them again once it has loaded everything, as
// pg_restore does: one sorted build of each index instead of an insert into
// each for every row (the tasks' GIN search index most of all). The
// indexes that back a constraint (primary keys, unique constraints) stay,
// so a conflicting id is refused as it comes. It is for an empty target
// only: DROP INDEX locks its table until the transaction ends, and the
// whole of it, the drops included, is undone if anything fails.
func withIndexesBuiltAfter(ctx context.Context, tx pgx.Tx, load func() error) error {
	rows, err := tx.Query(ctx, `SELECT quote_ident(ic.relname), pg_get_indexdef(i.indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
		WHERE c.relname = ANY($1) AND c.relnamespace = current_schema()::regnamespace
		AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
		ORDER BY ic.relname`, bulkTables)
	if err != nil {
		return fmt.Errorf("store: import: indexes: %w", err)
	}
	type index struct{ name, def string }
	indexes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (index, error) {
		var ix index
		return ix, r.Scan(&ix.name, &ix.def)
	})
	if err != nil {
		return fmt.Errorf("store: import: indexes: %w", err)
	}
	for _, ix := range indexes {
		if _, err := tx.Exec(ctx, "DROP INDEX "+ix.name); err != nil {
			return fmt.Errorf("store: import: drop index %s: %w", ix.name, err)
		}
	}
	if err := load(); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL maintenance_work_mem = '256MB'"); err != nil {
		return fmt.Errorf("store: import: %w", err)
	}
	for _, ix := range indexes {
		if _, err := tx.Exec(ctx, ix.def); err != nil {
			return fmt.Errorf("store: import: build index %s: %w", ix.name, err)
		}
	}
	return nil
}

// withSearch adds the tasks' search column, the prefixes of their titles'
// words as the server computes them (searchOf): left null, the database's
// trigger would compute it in SQL, row by row, which made an import of a
// million tasks four times slower (docs/performance.md#export-and-import).
func withSearch(cols []string, rows [][]any) ([]string, [][]any) {
	title := slices.Index(cols, "title")
	out := make([][]any, len(rows))
	for i, r := range rows {
		words := searchOf(asString(r[title]))
		lex := make([]pgtype.TSVectorLexeme, len(words))
		for j, w := range words {
			lex[j] = pgtype.TSVectorLexeme{Word: w}
		}
		out[i] = append(r[:len(r):len(r)], pgtype.TSVector{Lexemes: lex, Valid: true})
	}
	return append(cols[:len(cols):len(cols)], "search"), out
}

func (p pgImport) query(ctx context.Context, q string, args ...any) ([][]any, error) {
	rows, err := p.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

func (p pgImport) exec(ctx context.Context, q string, args ...any) error {
	_, err := p.tx.Exec(ctx, q, args...)
	return err
}

// sqliteImport writes an import's rows with multi-row INSERTs on the
// connection that holds the transaction.
type sqliteImport struct{ conn *sql.Conn }

func (s sqliteImport) insert(ctx context.Context, t *transferTable, cols []string, rows [][]any) error {
	// Binding is quadratic in a statement's values (sqliteParams).
	per := max(1, sqliteParams/len(cols))
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	for start := 0; start < len(rows); start += per {
		chunk := rows[start:min(start+per, len(rows))]
		// Only the schema's own names (transferTables) go into the text;
		// every value is an argument.
		q := "INSERT INTO " + t.table + " (" + strings.Join(cols, ", ") + ") VALUES " + //nolint:gosec // names of transferTables
			strings.TrimSuffix(strings.Repeat(one+", ", len(chunk)), ", ")
		args := make([]any, 0, len(chunk)*len(cols))
		for _, r := range chunk {
			args = append(args, r...)
		}
		if _, err := s.conn.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

func (s sqliteImport) query(ctx context.Context, q string, args ...any) ([][]any, error) {
	rows, err := s.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

func (s sqliteImport) exec(ctx context.Context, q string, args ...any) error {
	_, err := s.conn.ExecContext(ctx, q, args...)
	return err
}
