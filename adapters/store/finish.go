package store

import (
	"context"
	"fmt"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// FinishDeliveries writes the outcomes of many attempts, each only while
// owner holds its lease, moves their webhooks' failure spans, and returns
// how many it wrote and the spans of the webhooks whose attempts failed.
// Both databases run the same two statements in one transaction, so that a
// dispatcher finishing hundreds of attempts a second spends two round trips
// per batch, and the rule that moves a span is written once: spanMoves says
// what the written attempts say of each webhook, moveSpansSQL applies it.
func (s *DeliveryStore) FinishDeliveries(ctx context.Context, owner string, outs []domain.Outcome) (int64, []domain.FailureSpan, error) {
	if len(outs) == 0 {
		return 0, nil, nil
	}
	var (
		written int64
		spans   []domain.FailureSpan
	)
	err := s.db.InTx(ctx, func(ctx context.Context) error {
		ids, err := s.finishOutcomes(ctx, owner, outs)
		if err != nil {
			return err
		}
		written = int64(len(ids))
		spans, err = s.moveSpans(ctx, spanMoves(outs, ids))
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("store: finish deliveries: %w", err)
	}
	return written, spans, nil
}

// finishOutcomes writes the outcomes owner still holds the leases of, in
// one statement, and returns the ids it wrote.
func (s *DeliveryStore) finishOutcomes(ctx context.Context, owner string, outs []domain.Outcome) (map[string]bool, error) {
	q := sqlBuilder{dialect: s.db.dialect, args: make([]any, 0, 7*len(outs)+1)}
	q.write("WITH v(id, status, attempts, last_attempt_at, last_status_code, last_error, next_attempt_at) AS (VALUES ")
	q.rows(len(outs), []string{"text", "text", "integer", "timestamptz", "integer", "text", "timestamptz"}, func(i int) []any {
		r := deliveryToRow(outs[i].Delivery)
		return []any{r.ID, r.Status, r.Attempts, r.LastAttemptAt, r.LastStatusCode, r.LastError, r.NextAttemptAt}
	})
	q.write(`)
UPDATE webhook_deliveries SET status = v.status, attempts = v.attempts,
	last_attempt_at = v.last_attempt_at, last_status_code = v.last_status_code, last_error = v.last_error,
	next_attempt_at = v.next_attempt_at, lease_until = NULL, locked_by = NULL
FROM v WHERE webhook_deliveries.id = v.id AND webhook_deliveries.locked_by = ?
RETURNING webhook_deliveries.id`, owner)
	written := make(map[string]bool, len(outs))
	err := s.db.read(ctx, q.sql.String(), q.args, func(rows rowScanner) error {
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			written[id] = true
		}
		return nil
	})
	return written, err
}

// spanMove is what one batch's written attempts say of a webhook's
// failure span: one succeeded (the span ends, whatever failed beside it),
// or n failed, the first at first (the span starts then, unless it had
// already, and counts n more failures).
type spanMove struct {
	webhookID string
	ok        bool
	first     time.Time
	n         int
}

// spanMoves are the moves of the webhooks whose attempts among outs were
// written, in the order the webhooks first appear. An outcome without an
// attempt (a delivery given up unsent) moves nothing, and a delivery counts
// once: one row was written for it, though a batch may carry two outcomes
// of it (claimed again after its lease lapsed while the first attempt ran).
func spanMoves(outs []domain.Outcome, written map[string]bool) []spanMove {
	var moves []spanMove
	at := map[string]int{}
	counted := make(map[string]bool, len(outs))
	for _, o := range outs {
		if !o.Attempted || !written[o.Delivery.ID] || counted[o.Delivery.ID] {
			continue
		}
		counted[o.Delivery.ID] = true
		i, seen := at[o.Delivery.WebhookID]
		if !seen {
			i = len(moves)
			at[o.Delivery.WebhookID] = i
			moves = append(moves, spanMove{webhookID: o.Delivery.WebhookID, first: *o.Delivery.LastAttemptAt})
		}
		m := &moves[i]
		m.ok = m.ok || o.Succeeded()
		m.n++
		if o.Delivery.LastAttemptAt.Before(m.first) {
			m.first = *o.Delivery.LastAttemptAt
		}
	}
	return moves
}

// moveSpansSQL applies spanMoves (the VALUES list m) in one statement. A
// webhook whose span is already clear is not written when its attempts
// succeed, so the common case writes no webhook row. Every webhook it
// writes comes back with its span, those whose attempts succeeded too
// (SQLite's RETURNING cannot name the moves): moveSpans tells them apart.
const moveSpansSQL = `)
UPDATE webhooks SET
	failing_since = CASE WHEN m.ok = 1 THEN NULL ELSE coalesce(webhooks.failing_since, m.first_at) END,
	failed_attempts = CASE WHEN m.ok = 1 THEN 0 ELSE webhooks.failed_attempts + m.n END
FROM m WHERE webhooks.id = m.id AND (m.ok = 0 OR webhooks.failing_since IS NOT NULL OR webhooks.failed_attempts <> 0)
RETURNING webhooks.id, webhooks.workspace_id, webhooks.active, webhooks.failing_since, webhooks.failed_attempts`

// moveSpans moves the webhooks' failure spans and returns the spans of
// those whose attempts failed. A webhook deleted meanwhile has none.
func (s *DeliveryStore) moveSpans(ctx context.Context, moves []spanMove) ([]domain.FailureSpan, error) {
	if len(moves) == 0 {
		return nil, nil
	}
	q := sqlBuilder{dialect: s.db.dialect, args: make([]any, 0, 4*len(moves))}
	q.write("WITH m(id, ok, first_at, n) AS (VALUES ")
	failed := make(map[string]bool, len(moves))
	q.rows(len(moves), []string{"text", "integer", "timestamptz", "integer"}, func(i int) []any {
		m := moves[i]
		failed[m.webhookID] = !m.ok
		ok := 0
		if m.ok {
			ok = 1
		}
		return []any{m.webhookID, ok, Time(m.first), m.n}
	})
	q.write(moveSpansSQL)
	var spans []domain.FailureSpan
	err := s.db.read(ctx, q.sql.String(), q.args, func(rows rowScanner) error {
		for rows.Next() {
			var (
				sp domain.FailureSpan
				at NullTime
			)
			if err := rows.Scan(&sp.WebhookID, &sp.WorkspaceID, &sp.Active, &at, &sp.FailedAttempts); err != nil {
				return err
			}
			if failed[sp.WebhookID] {
				sp.FailingSince = at.Ptr()
				spans = append(spans, sp)
			}
		}
		return nil
	})
	return spans, err
}
