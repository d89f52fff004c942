package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// CreateTaskLogged writes a task with its event and deliveries
// (ports.TaskStore.CreateTaskLogged). On PostgreSQL, outside a
// transaction, it is one statement (createLogged): one round trip where
// BEGIN, the three inserts and COMMIT were five. Otherwise (SQLite, which
// has no writing WITH, or a caller's transaction) it runs CreateTasks,
// CreateEvents and CreateDeliveries in one transaction.
func (s *TaskStore) CreateTaskLogged(ctx context.Context, t domain.Task, o ports.Outboxed) (int, error) {
	if _, inTx := ctx.Value(txKey{s.db}).(*gorm.DB); s.db.dialect != DialectPostgres || inTx {
		return s.createLoggedInTx(ctx, t, o)
	}
	ids := make([]string, domain.MaxWebhooksPerWorkspace)
	for i := range ids {
		ids[i] = o.NewDeliveryID()
	}
	q := createLogged(t, o, ids, traceParentOf(ctx))
	n := 0
	err := s.db.read(ctx, q.sql.String(), q.args, func(rows rowScanner) error {
		for rows.Next() {
			if err := rows.Scan(&n); err != nil {
				return err
			}
		}
		return nil
	})
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
	case errors.As(err, &pgErr) && pgErr.Code == foreignKeyViolation && pgErr.TableName == "tasks":
		return 0, domain.NotFound("project", t.ProjectID)
	case errors.As(err, &pgErr) && pgErr.Code == notNullViolation && pgErr.TableName == "webhook_deliveries" && pgErr.ColumnName == "id":
		// More subscribers than ids: a workspace that has more webhooks
		// than it may (made before the limit). The statement wrote
		// nothing; the transaction mints an id for each.
		return s.createLoggedInTx(ctx, t, o)
	default:
		return 0, fmt.Errorf("store: create task: %w", err)
	}
	if n > 0 {
		s.db.announceDeliveries(ctx)
	}
	return n, nil
}

// SQLSTATEs that CreateTaskLogged tells apart.
const (
	foreignKeyViolation = "23503"
	notNullViolation    = "23502"
)

// createLogged is a task's creation on PostgreSQL in one statement: the
// task (CreateTasks' row), its event (CreateEvents' row, without a group),
// and a delivery for each webhook subscribed to it (subscribedSQL), the
// i-th by id taking ids[i] (NULL past the end, which the id's NOT NULL
// refuses), its other columns those of domain.NewDelivery. A statement is
// atomic, the webhooks it reads are those of its snapshot (as the
// RETURNING of a transaction's event insert reads them), and the foreign
// keys are checked at its end. Values of an INSERT … SELECT take no type
// from their columns, hence the casts.
func createLogged(t domain.Task, o ports.Outboxed, ids []string, traceParent *string) *sqlBuilder {
	e := o.Event
	var project *string
	if p := e.ProjectID(); p != "" {
		project = &p
	}
	d := deliveryToRow(domain.NewDelivery("", "", e))
	q := &sqlBuilder{dialect: DialectPostgres, args: make([]any, 0, 28)}
	q.write("WITH t AS (\n    INSERT INTO tasks ("+taskColumns+", search) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, array_to_tsvector(?::text[]))",
		append(taskArgs(t), pgTextArray(searchOf(t.Title)))...)
	q.write("\n    RETURNING workspace_id\n), e AS (\n    INSERT INTO events (id, workspace_id, type, project_id, created_at, payload, trace_parent)")
	q.write("\n    SELECT ?::text, t.workspace_id, ?::text, ?::text, ?::timestamptz, ?::bytea, ?::text FROM t",
		e.ID, string(e.Type), project, Time(e.CreatedAt), o.Payload, traceParent)
	q.write("\n    RETURNING id, workspace_id, type\n), s AS (\n    SELECT w.id, row_number() OVER (ORDER BY w.id) AS n")
	q.write("\n    FROM e JOIN webhooks w ON " + subscribedSQL(DialectPostgres, "w", "e"))
	q.write("\n), d AS (\n    INSERT INTO webhook_deliveries (id, workspace_id, webhook_id, event_id, event_type, status, attempts," +
		"\n        last_attempt_at, last_status_code, last_error, next_attempt_at, window_start, created_at)")
	q.write("\n    SELECT (?::text[])[s.n], ?::text, s.id, ?::text, ?::text, ?::text, ?::integer, ?::timestamptz, ?::integer,"+
		"\n        ?::text, ?::timestamptz, ?::timestamptz, ?::timestamptz FROM s",
		pgTextArray(ids), d.WorkspaceID, d.EventID, d.EventType, d.Status, d.Attempts,
		d.LastAttemptAt, d.LastStatusCode, d.LastError, d.NextAttemptAt, d.WindowStart, d.CreatedAt)
	q.write("\n    RETURNING 1\n)\nSELECT count(*) FROM d")
	return q
}

// createLoggedInTx is CreateTaskLogged as the statements of the outbox's
// RecordEvent, in one transaction, with an id minted for each delivery.
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
		ds := make([]domain.Delivery, len(subscribers[0]))
		for i, id := range subscribers[0] {
			ds[i] = domain.NewDelivery(o.NewDeliveryID(), id, o.Event)
		}
		n = len(ds)
		return s.db.Deliveries().CreateDeliveries(ctx, ds)
	})
	return n, err
}
