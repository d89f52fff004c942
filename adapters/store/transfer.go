package store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/worktrack/worktrack/core/domain"
)

// Export and import (docs/export.md): each kind of record is one table,
// written as a JSON object of its columns. The values are portable between
// the dialects: times in the API's UTC microsecond format, booleans as
// booleans, binary values as standard base64, an event's payload as the
// JSON document it is. transferTables is the one list of what a file
// holds, in the core's kind order; transferDerived are the tables a file
// leaves out because an import rebuilds them. A test fails when a
// migration adds a table that is in neither.

// colType is how a column's value travels.
type colType int

const (
	colText colType = iota
	colInt
	colBool
	colTime
	colBytes
	colJSON // a JSON document kept byte for byte (an event's payload)
)

type transferCol struct {
	name string
	typ  colType
}

// transferTable is one kind's table: its columns in file order, where an
// export reads them (a view, for the projects' folded counts), its order,
// and how to keep one workspace's rows.
type transferTable struct {
	kind  domain.ExportKind
	table string
	from  string
	cols  []transferCol
	// orderBy is the rows' order in a file (and so an import's insert
	// order); wsFilter keeps one workspace's rows (one ? argument).
	orderBy  func(dialect string) string
	wsFilter string
	// since bounds how old a row may be (idempotency records past their
	// window are not carried); "" keeps every row.
	since string
	// importCols are left out on import, where the database fills them
	// (projects' counts, counted again from the tasks).
	zeroOnImport []string
}

func cols(spec ...any) []transferCol {
	out := make([]transferCol, 0, len(spec)/2)
	for i := 0; i < len(spec); i += 2 {
		out = append(out, transferCol{name: spec[i].(string), typ: spec[i+1].(colType)})
	}
	return out
}

func fixedOrder(o string) func(string) string { return func(string) string { return o } }

var transferTables = []transferTable{
	{kind: domain.ExportWorkspace, table: "workspaces", from: "workspaces",
		cols:    cols("id", colText, "name", colText, "created_at", colTime),
		orderBy: fixedOrder("created_at, id"), wsFilter: "id = ?"},
	{kind: domain.ExportUser, table: "users", from: "users",
		cols:    cols("id", colText, "workspace_id", colText, "email", colText, "name", colText, "role", colText, "created_at", colTime),
		orderBy: fixedOrder("created_at, id"), wsFilter: "workspace_id = ?"},
	{kind: domain.ExportAPIKey, table: "api_keys", from: "api_keys",
		cols: cols("id", colText, "workspace_id", colText, "user_id", colText, "name", colText, "prefix", colText,
			"secret_hash", colText, "scopes", colText, "project_ids", colText, "created_at", colTime,
			"expires_at", colTime, "revoked_at", colTime, "last_used_at", colTime),
		orderBy: fixedOrder("created_at, id"), wsFilter: "workspace_id = ?"},
	{kind: domain.ExportProject, table: "projects", from: "projects_counted",
		cols: cols("id", colText, "workspace_id", colText, "name", colText, "key", colText, "created_at", colTime,
			"updated_at", colTime, "open_count", colInt, "in_progress_count", colInt, "done_count", colInt, "archived_count", colInt),
		orderBy: fixedOrder("created_at, id"), wsFilter: "workspace_id = ?",
		zeroOnImport: []string{"open_count", "in_progress_count", "done_count", "archived_count"}},
	{kind: domain.ExportTask, table: "tasks", from: "tasks",
		cols: cols("id", colText, "workspace_id", colText, "project_id", colText, "title", colText, "status", colText,
			"assignee_id", colText, "due_at", colTime, "created_at", colTime, "updated_at", colTime),
		orderBy: fixedOrder("created_at, id"), wsFilter: "workspace_id = ?"},
	{kind: domain.ExportWebhook, table: "webhooks", from: "webhooks",
		cols: cols("id", colText, "workspace_id", colText, "url", colText, "events", colText, "active", colBool,
			"secret", colText, "previous_secret", colText, "previous_secret_expires_at", colTime, "headers", colText,
			"disabled_reason", colText, "disabled_at", colTime, "failing_since", colTime, "failed_attempts", colInt,
			"created_at", colTime, "updated_at", colTime),
		orderBy: fixedOrder("created_at, id"), wsFilter: "workspace_id = ?"},
	// Events in log order: positioned ones by position, then those not yet
	// positioned in the order they were inserted.
	{kind: domain.ExportEvent, table: "events", from: "events",
		cols: cols("id", colText, "workspace_id", colText, "type", colText, "project_id", colText, "created_at", colTime,
			"payload", colJSON, "seq", colInt),
		orderBy: func(dialect string) string {
			if dialect == DialectPostgres {
				return "seq NULLS LAST, inserted"
			}
			return "seq IS NULL, seq, rowid"
		}, wsFilter: "workspace_id = ?"},
	// A delivery's lease belongs to a dispatcher of the source: an import
	// leaves it free, so that a pending delivery is claimed and sent.
	{kind: domain.ExportDelivery, table: "webhook_deliveries", from: "webhook_deliveries",
		cols: cols("id", colText, "workspace_id", colText, "webhook_id", colText, "event_id", colText, "event_type", colText,
			"status", colText, "attempts", colInt, "last_attempt_at", colTime, "last_status_code", colInt, "last_error", colText,
			"next_attempt_at", colTime, "window_start", colTime, "created_at", colTime),
		orderBy: fixedOrder("created_at, id"), wsFilter: "workspace_id = ?"},
	{kind: domain.ExportIdempotency, table: "idempotency_keys", from: "idempotency_keys",
		cols: cols("api_key_id", colText, "idempotency_key", colText, "method", colText, "path", colText, "body_hash", colText,
			"done", colBool, "response_status", colInt, "response_body", colBytes, "role", colText, "created_at", colTime),
		orderBy:  fixedOrder("created_at, api_key_id, idempotency_key"),
		wsFilter: "api_key_id IN (SELECT id FROM api_keys WHERE workspace_id = ?)", since: "created_at > ?"},
	{kind: domain.ExportAuditEvent, table: "audit_events", from: "audit_events",
		cols: cols("id", colText, "workspace_id", colText, "seq", colInt, "action", colText, "actor_type", colText,
			"actor_user_id", colText, "actor_api_key_id", colText, "actor_ip", colText, "actor_user_agent", colText,
			"target_type", colText, "target_id", colText, "changes", colText, "request_id", colText, "created_at", colTime,
			"prev_hash", colText, "hash", colText),
		orderBy: fixedOrder("workspace_id, seq"), wsFilter: "workspace_id = ?"},
	{kind: domain.ExportAuditHead, table: "audit_heads", from: "audit_heads",
		cols: cols("workspace_id", colText, "seq", colInt, "hash", colText, "last_at", colTime, "pruned_seq", colInt,
			"pruned_hash", colText),
		orderBy: fixedOrder("workspace_id"), wsFilter: "workspace_id = ?"},
}

// transferDerived are the tables a file leaves out: the migrations'
// record, what an import counts or positions again (the event sequence's
// last position, PostgreSQL's count deltas) and SQLite's full-text index,
// which its triggers fill.
var transferDerived = map[string]bool{
	"goose_db_version": true, "event_sequence": true, "project_count_deltas": true,
	"tasks_fts": true, "tasks_fts_config": true, "tasks_fts_data": true, "tasks_fts_docsize": true, "tasks_fts_idx": true,
	"sqlite_sequence": true,
}

// transferTableOf is the table of kind k.
func transferTableOf(k domain.ExportKind) *transferTable {
	for i := range transferTables {
		if transferTables[i].kind == k {
			return &transferTables[i]
		}
	}
	return nil
}

// appendValue writes a column's value as its JSON.
func appendValue(b []byte, c transferCol, v any) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	switch c.typ {
	case colText:
		switch s := v.(type) {
		case string:
			return appendJSONString(b, s), nil
		case []byte:
			return appendJSONString(b, string(s)), nil
		}
	case colInt:
		switch n := v.(type) {
		case int64:
			return strconv.AppendInt(b, n, 10), nil
		case int32:
			return strconv.AppendInt(b, int64(n), 10), nil
		case int:
			return strconv.AppendInt(b, int64(n), 10), nil
		}
	case colBool:
		switch x := v.(type) {
		case bool:
			return strconv.AppendBool(b, x), nil
		case int64:
			return strconv.AppendBool(b, x != 0), nil
		}
	case colTime:
		t, ok, err := scanTime(v)
		if err != nil {
			return nil, err
		}
		if !ok {
			return append(b, "null"...), nil
		}
		b = append(b, '"')
		b = t.UTC().AppendFormat(b, timeLayout)
		return append(b, '"'), nil
	case colBytes:
		raw, ok := v.([]byte)
		if s, isStr := v.(string); isStr {
			raw, ok = []byte(s), true
		}
		if ok {
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			return append(b, '"'), nil
		}
	case colJSON:
		raw, ok := v.([]byte)
		if s, isStr := v.(string); isStr {
			raw, ok = []byte(s), true
		}
		if ok && json.Valid(raw) {
			return append(b, raw...), nil
		}
	}
	return nil, fmt.Errorf("store: export: column %s holds %T", c.name, v)
}

// appendJSONString writes s as a JSON string, as encoding/json does (but
// for its HTML escaping, which a file does not need): control characters
// escaped, invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// importValue reads a record's field for column c into the Go value the
// dialect's driver writes. A value of the wrong JSON type is an error the
// caller names by line.
func importValue(c transferCol, raw json.RawMessage, dialect string) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch c.typ {
	case colText:
		return decodeString(raw)
	case colInt:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not an integer", c.name)
		}
		return n, nil
	case colBool:
		switch string(raw) {
		case "true":
			if dialect == DialectPostgres {
				return true, nil
			}
			return int64(1), nil
		case "false":
			if dialect == DialectPostgres {
				return false, nil
			}
			return int64(0), nil
		}
		return nil, fmt.Errorf("%s is not a boolean", c.name)
	case colTime:
		s, err := decodeString(raw)
		if err != nil {
			return nil, err
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("%s is not a time", c.name)
		}
		t = t.UTC().Truncate(time.Microsecond)
		if dialect == DialectPostgres {
			return t, nil
		}
		return t.Format(timeLayout), nil
	case colBytes:
		s, err := decodeString(raw)
		if err != nil {
			return nil, err
		}
		out, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%s is not base64", c.name)
		}
		return out, nil
	case colJSON:
		if !json.Valid(raw) {
			return nil, fmt.Errorf("%s is not JSON", c.name)
		}
		return []byte(raw), nil
	}
	return nil, fmt.Errorf("%s: unknown column type", c.name)
}

// decodeString reads a JSON string, without allocating twice for one that
// holds no escape.
func decodeString(raw json.RawMessage) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		inner := raw[1 : len(raw)-1]
		plain := true
		for _, c := range inner {
			if c == '\\' || c == '"' || c < 0x20 {
				plain = false
				break
			}
		}
		if plain && utf8.Valid(inner) {
			return string(inner), nil
		}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("not a string")
	}
	return s, nil
}
