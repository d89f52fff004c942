package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type eventRow struct {
	ID          string  `gorm:"column:id;primaryKey"`
	WorkspaceID string  `gorm:"column:workspace_id"`
	Type        string  `gorm:"column:type"`
	ProjectID   *string `gorm:"column:project_id"`
	CreatedAt   Time    `gorm:"column:created_at"`
	Seq         *int64  `gorm:"column:seq"`
	Payload     []byte  `gorm:"column:payload"`
}

func (eventRow) TableName() string { return "events" }

func eventFromRow(r eventRow) (domain.LoggedEvent, error) {
	e := domain.LoggedEvent{ID: r.ID, WorkspaceID: r.WorkspaceID, Type: domain.EventType(r.Type),
		CreatedAt: time.Time(r.CreatedAt), Payload: r.Payload}
	if r.ProjectID != nil {
		e.ProjectID = *r.ProjectID
	}
	if r.Seq != nil {
		e.Seq = *r.Seq
	}
	return domain.RestoreLoggedEvent(e)
}

// EventStore keeps the event log.
type EventStore struct{ db *DB }

var _ ports.EventStore = (*EventStore)(nil)

// Events is the event repository of db.
func (db *DB) Events() *EventStore { return &EventStore{db: db} }

// CreateEvents inserts es, each with its payload bytes as they are, without
// a log position: PositionEvents gives them one after they commit. On
// PostgreSQL, more than one event get a log_group drawn just before them
// (migration 00012), so that the sequencer positions them one after another
// although concurrent transactions draw inserted numbers between theirs.
//
// The insert also returns, for each event, the ids of its workspace's
// active webhooks subscribed to its type (subscribersSQL), read by the same
// statement and so as of the same moment as a separate read in the
// transaction would have: the outbox's fan-out costs a create no statement
// of its own.
func (s *EventStore) CreateEvents(ctx context.Context, es []domain.Event, payloads [][]byte) ([][]string, error) {
	if len(es) != len(payloads) {
		return nil, fmt.Errorf("store: create events: %d events, %d payloads", len(es), len(payloads))
	}
	if len(es) == 0 {
		return nil, nil
	}
	var group *int64
	if len(es) > 1 && s.db.dialect == DialectPostgres {
		var g int64
		if err := s.db.conn(ctx).Raw("SELECT nextval(pg_get_serial_sequence('events', 'inserted'))").Scan(&g).Error; err != nil {
			return nil, fmt.Errorf("store: create events: %w", err)
		}
		group = &g
	}
	traceParent := traceParentOf(ctx)
	subscribers := make([][]string, len(es))
	at := make(map[string]int, len(es))
	for i, e := range es {
		at[e.ID] = i
	}
	// Rows are inserted in the order given, so their inserted numbers
	// (rowids on SQLite) follow it.
	per := s.db.insertRows(8)
	for start := 0; start < len(es); start += per {
		chunk := es[start:min(start+per, len(es))]
		q := sqlBuilder{dialect: s.db.dialect, args: make([]any, 0, 8*len(chunk))}
		q.write("INSERT INTO events (id, workspace_id, type, project_id, created_at, payload, log_group, trace_parent) VALUES ")
		q.values(len(chunk), "(?, ?, ?, ?, ?, ?, ?, ?)", func(i int) []any {
			e := chunk[i]
			var project *string
			if p := e.ProjectID(); p != "" {
				project = &p
			}
			return []any{e.ID, e.WorkspaceID, string(e.Type), project, Time(e.CreatedAt), payloads[start+i], group, traceParent}
		})
		q.write(" RETURNING id, " + subscribersSQL(s.db.dialect))
		err := s.db.read(ctx, q.sql.String(), q.args, func(rows rowScanner) error {
			for rows.Next() {
				var (
					id   string
					subs sql.NullString
				)
				if err := rows.Scan(&id, &subs); err != nil {
					return err
				}
				i, ok := at[id]
				if !ok {
					return fmt.Errorf("an event %q that was not inserted", id)
				}
				if subs.Valid && subs.String != "" {
					subscribers[i] = strings.Split(subs.String, ",")
					slices.Sort(subscribers[i])
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: create events: %w", err)
		}
	}
	return subscribers, nil
}

// subscribersSQL is, in an INSERT … RETURNING of events, the ids of the
// event's workspace's active webhooks whose events (a JSON array of type
// names) include the event's type, joined by commas (ids hold none), or
// NULL. A workspace has at most 20 webhooks, read by the index on
// workspace_id.
func subscribersSQL(dialect string) string {
	if dialect == DialectPostgres {
		return "(SELECT string_agg(w.id, ',') FROM webhooks w WHERE " + subscribedSQL(dialect, "w", "events") + ")"
	}
	return "(SELECT group_concat(w.id, ',') FROM webhooks w WHERE " + subscribedSQL(dialect, "w", "events") + ")"
}

// subscribedSQL is the condition that webhook w owes a delivery of event
// e: w is an active webhook of e's workspace whose events (a JSON array of
// type names) include e's type.
func subscribedSQL(dialect, w, e string) string {
	find := "instr"
	if dialect == DialectPostgres {
		find = "strpos"
	}
	return w + ".workspace_id = " + e + ".workspace_id AND " + w + ".active AND " +
		find + "(" + w + ".events, '\"' || " + e + ".type || '\"') > 0"
}

// positionBatch bounds one sequencer transaction; PositionEvents runs as
// many as the backlog takes.
const positionBatch = 5000

// unpositioned selects the events the sequencer has still to position: pings
// never are (they are not in the log). It is the predicate of the partial
// index events_unpositioned_idx, written out with its literal so that both
// databases' planners match the index to it.
const unpositioned = "seq IS NULL AND type <> '" + string(domain.EventWebhookPing) + "'"

// PositionEvents is the sequencer. In one transaction it locks the counter
// row (PostgreSQL: FOR UPDATE, so sequencers of every process take turns;
// SQLite: its write transaction already excludes every other writer),
// gives the committed events without a position the next ones, in the
// order they were inserted (PostgreSQL: a bigserial; SQLite: the rowid),
// and moves the counter on. Events of changes made one after another are
// thus positioned in commit order whatever the clocks say; concurrent
// transactions have no commit order a client could observe.
//
// Why this cannot skip or repeat: a transaction's events become visible to
// the sequencer only once it has committed, and each sequencer run hands out
// positions above every position handed out before it. So an event that
// commits after a reader has read up to position N is positioned later, above
// N, and a reader resuming after N finds it; positions never change once
// given. Readers see only positioned events, and a run's positions appear at
// once (one transaction), so a reader never sees N+2 without N+1.
//
// It runs batches of positionBatch, each its own transaction so that no
// writer waits behind a long one, until a batch finds fewer: every event
// that committed before the call is then positioned, whatever the backlog
// (docs/events.md).
func (s *EventStore) PositionEvents(ctx context.Context) (int64, error) {
	var total int64
	for {
		n, err := s.positionSome(ctx)
		total += n
		if err != nil || n < positionBatch {
			return total, err
		}
	}
}

// positionSome positions at most positionBatch of the oldest committed
// events without a position, in one transaction.
func (s *EventStore) positionSome(ctx context.Context) (int64, error) {
	var pending int64
	if err := s.db.conn(ctx).Raw("SELECT count(*) FROM (SELECT 1 FROM events WHERE " + unpositioned + " LIMIT 1) AS p").
		Scan(&pending).Error; err != nil {
		return 0, fmt.Errorf("store: position events: %w", err)
	}
	if pending == 0 {
		return 0, nil
	}
	var total int64
	err := s.db.InTx(ctx, func(ctx context.Context) error {
		lock := "SELECT last FROM event_sequence WHERE id = 1"
		if s.db.dialect == DialectPostgres {
			lock += " FOR UPDATE"
		}
		var last int64
		if err := s.db.conn(ctx).Raw(lock).Scan(&last).Error; err != nil {
			return err
		}
		res := s.db.conn(ctx).Exec(s.positionSQL(), last, positionBatch)
		if res.Error != nil {
			return res.Error
		}
		total = res.RowsAffected
		if total == 0 {
			return nil
		}
		if err := s.db.conn(ctx).Exec("UPDATE event_sequence SET last = ? WHERE id = 1", last+total).Error; err != nil {
			return err
		}
		if s.db.dialect != DialectPostgres {
			return nil
		}
		// Sent at commit: every process's live feed reads the new positions.
		return s.db.conn(ctx).Exec("SELECT pg_notify(" + eventChannelExpr + ", '')").Error
	})
	if err != nil {
		return 0, fmt.Errorf("store: position events: %w", err)
	}
	return total, nil
}

// positionSQL positions the events toPosition reads, in its order.
func (s *EventStore) positionSQL() string {
	return `UPDATE events SET seq = ? + next.n
FROM (SELECT id, row_number() OVER (ORDER BY ord, within) AS n FROM (` + toPosition(s.db.dialect) + `) AS oldest) AS next
WHERE events.id = next.id`
}

// toPosition reads the oldest unpositioned events, at most a limit of them
// (its one argument) but never part of a group: PostgreSQL orders by
// coalesce(log_group, inserted), then inserted, and takes a last group
// whole (WITH TIES); SQLite's rowids already follow commit order, one
// writer at a time. Both are scans of events_unpositioned_idx in order.
func toPosition(dialect string) string {
	if dialect == DialectPostgres {
		return "SELECT id, coalesce(log_group, inserted) AS ord, inserted AS within FROM events WHERE " + unpositioned +
			" ORDER BY coalesce(log_group, inserted) FETCH FIRST ? ROWS WITH TIES"
	}
	return "SELECT id, rowid AS ord, 0 AS within FROM events WHERE " + unpositioned + " ORDER BY rowid LIMIT ?"
}

// ListEvents lists positioned events in log order after f.AfterSeq.
func (s *EventStore) ListEvents(ctx context.Context, f ports.EventFilter) ([]domain.LoggedEvent, error) {
	q := s.db.conn(ctx).Where("workspace_id = ? AND seq IS NOT NULL AND seq > ?", f.WorkspaceID, f.AfterSeq)
	if len(f.Types) > 0 {
		types := make([]string, len(f.Types))
		for i, t := range f.Types {
			types[i] = string(t)
		}
		q = q.Where("type IN ?", types)
	}
	if f.ProjectID != nil {
		q = q.Where("project_id = ?", *f.ProjectID)
	}
	if f.ProjectIDs != nil {
		q = q.Where("project_id IN ?", append([]string{""}, f.ProjectIDs...)) // never an empty IN list
	}
	if f.ProjectsOnly {
		q = q.Where("project_id IS NOT NULL")
	}
	var rows []eventRow
	if err := q.Order("seq").Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list events: %w", err)
	}
	return restoreRows(rows, eventFromRow)
}

// FindEvent returns a positioned event of the workspace.
func (s *EventStore) FindEvent(ctx context.Context, workspaceID, id string) (domain.LoggedEvent, error) {
	var row eventRow
	err := s.db.conn(ctx).Where("workspace_id = ? AND id = ? AND seq IS NOT NULL", workspaceID, id).Take(&row).Error
	if err != nil {
		return domain.LoggedEvent{}, notFoundOr(err, "event", id)
	}
	return eventFromRow(row)
}

// LastPosition is the highest log position given so far.
func (s *EventStore) LastPosition(ctx context.Context) (int64, error) {
	var last int64
	if err := s.db.conn(ctx).Raw("SELECT last FROM event_sequence WHERE id = 1").Find(&last).Error; err != nil {
		return 0, fmt.Errorf("store: last log position: %w", err)
	}
	return last, nil
}

// ReadLog lists positioned events of every workspace after afterSeq, in log
// order (the unique index on seq).
func (s *EventStore) ReadLog(ctx context.Context, afterSeq int64, limit int) ([]domain.LoggedEvent, error) {
	var rows []eventRow
	if err := s.db.conn(ctx).Where("seq > ?", afterSeq).Order("seq").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: read log: %w", err)
	}
	return restoreRows(rows, eventFromRow)
}

// PurgeEvents deletes up to limit events created before cutoff that have no
// pending delivery, and their (finished) deliveries, in one transaction.
func (s *EventStore) PurgeEvents(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	var n int64
	err := s.db.InTx(ctx, func(ctx context.Context) error {
		var ids []string
		err := s.db.conn(ctx).Raw(`SELECT e.id FROM events e
WHERE e.created_at < ? AND NOT EXISTS (
  SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
ORDER BY e.created_at LIMIT ?`, Time(cutoff), limit).Scan(&ids).Error
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := s.db.conn(ctx).Exec("DELETE FROM webhook_deliveries WHERE event_id IN ? AND status <> 'pending'", ids).Error; err != nil {
			return err
		}
		res := s.db.conn(ctx).Exec("DELETE FROM events WHERE id IN ?", ids)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("store: purge events: %w", err)
	}
	return n, nil
}
