package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// finishManySQL writes many outcomes in one statement (PostgreSQL), and
// moves the failure spans of their webhooks in the same statement: the
// VALUES list carries one row per outcome, typed by the casts of its first
// row; only rows owner still holds are written, and only those count. A
// webhook whose span is already clear is not written when its attempts
// succeed, so the common case writes no webhook row.
const finishManySQL = `WITH v(id, status, attempts, last_attempt_at, last_status_code, last_error, next_attempt_at, attempted) AS (VALUES %s),
fin AS (
	UPDATE webhook_deliveries d SET status = v.status, attempts = v.attempts,
		last_attempt_at = v.last_attempt_at, last_status_code = v.last_status_code, last_error = v.last_error,
		next_attempt_at = v.next_attempt_at, lease_until = NULL, locked_by = NULL
	FROM v WHERE d.id = v.id AND d.locked_by = ?
	RETURNING d.webhook_id, v.status, v.last_attempt_at, v.attempted),
agg AS (
	SELECT webhook_id, bool_or(status = ?) AS ok, min(last_attempt_at) AS first_at, count(*) AS n
	FROM fin WHERE attempted GROUP BY webhook_id),
spans AS (
	UPDATE webhooks w SET
		failing_since = CASE WHEN a.ok THEN NULL ELSE coalesce(w.failing_since, a.first_at) END,
		failed_attempts = CASE WHEN a.ok THEN 0 ELSE w.failed_attempts + a.n END
	FROM agg a
	WHERE w.id = a.webhook_id AND (NOT a.ok OR w.failing_since IS NOT NULL OR w.failed_attempts <> 0)
	RETURNING w.id, w.workspace_id, w.active, w.failing_since, w.failed_attempts, a.ok)
SELECT (SELECT count(*) FROM fin) AS written, s.id, s.workspace_id, s.active, s.failing_since, s.failed_attempts
FROM (SELECT 1) AS one LEFT JOIN spans s ON NOT s.ok`

// spanRow is a webhook's failure span as the statements above return it.
type spanRow struct {
	Written        int64    `gorm:"column:written"`
	ID             *string  `gorm:"column:id"`
	WorkspaceID    string   `gorm:"column:workspace_id"`
	Active         bool     `gorm:"column:active"`
	FailingSince   NullTime `gorm:"column:failing_since"`
	FailedAttempts int      `gorm:"column:failed_attempts"`
}

func (r spanRow) span() domain.FailureSpan {
	return domain.FailureSpan{WebhookID: *r.ID, WorkspaceID: r.WorkspaceID, Active: r.Active,
		FailingSince: r.FailingSince.Ptr(), FailedAttempts: r.FailedAttempts}
}

// FinishDeliveries writes the outcomes of many attempts, each only while
// owner holds its lease, moves their webhooks' failure spans, and returns
// how many it wrote and the spans of the webhooks whose attempts failed. On
// PostgreSQL that is one statement, so that a dispatcher finishing
// hundreds of attempts a second spends one round trip per batch; on SQLite,
// whose writes are serialised anyway, single-row updates in one transaction.
func (s *DeliveryStore) FinishDeliveries(ctx context.Context, owner string, outs []domain.Outcome) (int64, []domain.FailureSpan, error) {
	if len(outs) == 0 {
		return 0, nil, nil
	}
	if s.db.dialect != DialectPostgres {
		return s.finishEach(ctx, owner, outs)
	}
	const first = "(?::text, ?::text, ?::integer, ?::timestamptz, ?::integer, ?::text, ?::timestamptz, ?::boolean)"
	const rest = "(?, ?, ?, ?, ?, ?, ?, ?)"
	var values strings.Builder
	args := make([]any, 0, 8*len(outs)+2)
	for i, o := range outs {
		if i == 0 {
			values.WriteString(first)
		} else {
			values.WriteString(", " + rest)
		}
		r := deliveryToRow(o.Delivery)
		args = append(args, r.ID, r.Status, r.Attempts, r.LastAttemptAt, r.LastStatusCode, r.LastError, r.NextAttemptAt, o.Attempted)
	}
	args = append(args, owner, string(domain.DeliverySucceeded))
	var rows []spanRow
	if err := s.db.conn(ctx).Raw(fmt.Sprintf(finishManySQL, values.String()), args...).Scan(&rows).Error; err != nil {
		return 0, nil, fmt.Errorf("store: finish deliveries: %w", err)
	}
	var written int64
	var spans []domain.FailureSpan
	for _, r := range rows {
		written = r.Written
		if r.ID != nil {
			spans = append(spans, r.span())
		}
	}
	return written, spans, nil
}

// attemptsOf is what one batch's written attempts say of a webhook: one
// succeeded, or how many failed, the first when.
type attemptsOf struct {
	ok    bool
	first time.Time
	n     int
}

// finishEach is FinishDeliveries on SQLite.
func (s *DeliveryStore) finishEach(ctx context.Context, owner string, outs []domain.Outcome) (int64, []domain.FailureSpan, error) {
	var n int64
	var spans []domain.FailureSpan
	err := s.db.InTx(ctx, func(ctx context.Context) error {
		n, spans = 0, nil
		hooks := map[string]*attemptsOf{}
		var order []string
		for _, o := range outs {
			ok, err := s.FinishDelivery(ctx, o.Delivery, owner)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			n++
			if !o.Attempted {
				continue
			}
			a := hooks[o.Delivery.WebhookID]
			if a == nil {
				a = &attemptsOf{first: *o.Delivery.LastAttemptAt}
				hooks[o.Delivery.WebhookID] = a
				order = append(order, o.Delivery.WebhookID)
			}
			a.ok = a.ok || o.Succeeded()
			a.n++
			if o.Delivery.LastAttemptAt.Before(a.first) {
				a.first = *o.Delivery.LastAttemptAt
			}
		}
		for _, id := range order {
			span, err := s.moveSpan(ctx, id, *hooks[id])
			if err != nil {
				return err
			}
			if span != nil {
				spans = append(spans, *span)
			}
		}
		return nil
	})
	return n, spans, err
}

// moveSpan moves one webhook's failure span (SQLite) and returns it when
// its attempts failed.
func (s *DeliveryStore) moveSpan(ctx context.Context, id string, a attemptsOf) (*domain.FailureSpan, error) {
	if a.ok {
		err := s.db.conn(ctx).Exec(`UPDATE webhooks SET failing_since = NULL, failed_attempts = 0
			WHERE id = ? AND (failing_since IS NOT NULL OR failed_attempts <> 0)`, id).Error
		if err != nil {
			return nil, fmt.Errorf("store: end failure span: %w", err)
		}
		return nil, nil
	}
	err := s.db.conn(ctx).Exec(`UPDATE webhooks SET failing_since = coalesce(failing_since, ?), failed_attempts = failed_attempts + ?
		WHERE id = ?`, Time(a.first), a.n, id).Error
	if err != nil {
		return nil, fmt.Errorf("store: extend failure span: %w", err)
	}
	var r spanRow
	err = s.db.conn(ctx).Raw(`SELECT id, workspace_id, active, failing_since, failed_attempts FROM webhooks WHERE id = ?`, id).Scan(&r).Error
	if err != nil || r.ID == nil {
		return nil, err // deleted meanwhile: no span
	}
	span := r.span()
	return &span, nil
}
