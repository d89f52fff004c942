package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// createLoggedSQL is a task's creation on PostgreSQL in one statement: the
// task (CreateTasks' row), its event (CreateEvents' row, without a group),
// and a delivery for each subscribed webhook (subscribedSQL), the i-th by
// id taking the i-th of the ids given, its other columns those of
// domain.NewDelivery. A statement is atomic, and the webhooks it reads are
// those of its snapshot, as the RETURNING of a transaction's event insert
// reads them; the foreign keys are checked at its end. Values of an
// INSERT … SELECT take no type from their columns, hence the casts. Sent outside a
// transaction it is one round trip where BEGIN, the three inserts and
// COMMIT were five.
var createLoggedSQL = `WITH t AS (
    INSERT INTO tasks (` + taskColumns + `, search) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, array_to_tsvector(?::text[]))
    RETURNING workspace_id
), e AS (
    INSERT INTO events (id, workspace_id, type, project_id, created_at, payload)
    SELECT ?::text, t.workspace_id, ?::text, ?::text, ?::timestamptz, ?::bytea FROM t
    RETURNING id, workspace_id, type
), s AS (
    SELECT w.id, row_number() OVER (ORDER BY w.id) AS n FROM e JOIN webhooks w ON ` + subscribedSQL(DialectPostgres, "w", "e") + `
), d AS (
    INSERT INTO webhook_deliveries (id, workspace_id, webhook_id, event_id, event_type, status, attempts,
        last_attempt_at, last_status_code, last_error, next_attempt_at, window_start, created_at)
    SELECT (?::text[])[s.n], ?::text, s.id, ?::text, ?::text, ?::text, ?::integer, ?::timestamptz, ?::integer,
        ?::text, ?::timestamptz, ?::timestamptz, ?::timestamptz FROM s
    RETURNING 1
)
SELECT count(*) FROM d`

// CreateTaskLogged writes a task with its event and deliveries
// (ports.TaskStore.CreateTaskLogged): one statement on PostgreSQL
// (createLoggedSQL), a transaction of CreateTasks, CreateEvents and
// CreateDeliveries on SQLite, which has no writing WITH.
func (s *TaskStore) CreateTaskLogged(ctx context.Context, t domain.Task, o ports.Outboxed) (int, error) {
	if s.db.dialect != DialectPostgres {
		return s.createLoggedInTx(ctx, t, o)
	}
	e := o.Event
	var project *string
	if p := e.ProjectID(); p != "" {
		project = &p
	}
	d := deliveryToRow(domain.NewDelivery("", "", e))
	args := append(taskArgs(t), pgTextArray(searchOf(t.Title)),
		e.ID, string(e.Type), project, Time(e.CreatedAt), o.Payload,
		pgTextArray(o.DeliveryIDs), d.WorkspaceID, d.EventID, d.EventType, d.Status, d.Attempts,
		d.LastAttemptAt, d.LastStatusCode, d.LastError, d.NextAttemptAt, d.WindowStart, d.CreatedAt)
	var n int
	err := s.db.read(ctx, createLoggedSQL, args, func(rows rowScanner) error {
		for rows.Next() {
			if err := rows.Scan(&n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == foreignKeyViolation {
			return 0, domain.NotFound("project", t.ProjectID)
		}
		return 0, fmt.Errorf("store: create task: %w", err)
	}
	if n > 0 {
		s.db.announceDeliveries(ctx)
	}
	return n, nil
}

// foreignKeyViolation is PostgreSQL's SQLSTATE for a refused reference.
const foreignKeyViolation = "23503"

// createLoggedInTx is CreateTaskLogged as the statements of the outbox's
// RecordEvent, in one transaction.
func (s *TaskStore) createLoggedInTx(ctx context.Context, t domain.Task, o ports.Outboxed) (int, error) {
	n := 0
	err := s.db.InTx(ctx, func(ctx context.Context) error {
		if err := s.CreateTasks(ctx, []domain.Task{t}); err != nil {
			return err
		}
		subscribers, err := s.db.Events().CreateEvents(ctx, []domain.Event{o.Event}, [][]byte{o.Payload})
		if err != nil {
			return err
		}
		if len(subscribers[0]) > len(o.DeliveryIDs) {
			return fmt.Errorf("store: create task: %d subscribers, %d delivery ids", len(subscribers[0]), len(o.DeliveryIDs))
		}
		ds := make([]domain.Delivery, len(subscribers[0]))
		for i, id := range subscribers[0] {
			ds[i] = domain.NewDelivery(o.DeliveryIDs[i], id, o.Event)
		}
		n = len(ds)
		return s.db.Deliveries().CreateDeliveries(ctx, ds)
	})
	return n, err
}
