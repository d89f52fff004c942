package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/worktrack/worktrack/core/ports"
)

// claimSQL leases due deliveries of active webhooks (and pings, which an
// inactive webhook is sent too) in one statement, on
// SQLite, under the database's single write lock: the oldest due
// deliveries of all webhooks (webhook_deliveries_due_idx; at most
// sqliteCandidates), of which at most
// the room of each webhook (n, row_number per webhook) and of each
// workspace (wn), each workspace's oldest first (interleaved by wn). The
// verbs fill in the webhooks and workspaces to skip, the per-webhook room
// and the per-workspace room (a join on a VALUES list, or a constant).
const claimSQL = `UPDATE webhook_deliveries SET lease_until = ?, locked_by = ?
WHERE id IN (
	SELECT q.id FROM (
		SELECT r.id, r.workspace_id, r.next_attempt_at,
			row_number() OVER (PARTITION BY r.workspace_id ORDER BY r.next_attempt_at, r.id) AS wn
		FROM (
			SELECT c.id, c.webhook_id, c.workspace_id, c.next_attempt_at,
				row_number() OVER (PARTITION BY c.webhook_id ORDER BY c.next_attempt_at, c.id) AS n
			FROM (
				SELECT d.id, d.webhook_id, d.workspace_id, d.next_attempt_at FROM webhook_deliveries d
				JOIN webhooks w ON w.workspace_id = d.workspace_id AND w.id = d.webhook_id
				WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
				AND (w.active OR d.event_type = 'webhook.ping') %s
				ORDER BY d.next_attempt_at
				LIMIT ?
			) c
		) r %s
	) q %s
	ORDER BY q.wn, q.next_attempt_at, q.id
	LIMIT ?
)
RETURNING id`

// pgClaimSQL leases due deliveries on PostgreSQL, webhook by webhook, so
// that what a claim reads is bounded by the room it offers, not by the
// backlog of a webhook that answers slowly: reading the oldest due
// deliveries of all webhooks, a claim had to pass over every due delivery
// of a slow webhook (skipped, at its cap) to reach a fast one's.
//
//   - hooks: the webhooks with pending deliveries, by a skip scan of
//     webhook_deliveries_webhook_due_idx (one index probe per webhook);
//   - for each one not skipped (nor its workspace), its oldest due
//     deliveries up to its room (an inactive webhook's pings only, filtered
//     before the limit so that older deliveries waiting for it to be
//     enabled again cannot crowd a ping out), by a range scan of the same
//     index, locked
//     FOR UPDATE SKIP LOCKED: concurrent claims pass over each other's
//     rows instead of waiting or taking them too, and the webhooks rows are
//     not locked;
//   - of those, at most each workspace's room (wn, row_number per
//     workspace), each workspace's oldest first and then its next ones
//     (ordered by wn), up to Limit, are leased. A candidate left out is not
//     updated, and its row lock ends with the statement.
//
// The verbs fill in the per-webhook room (a join on a VALUES list, or
// nothing) and its expression, the webhooks and workspaces to skip, and
// the per-workspace room.
const pgClaimSQL = `WITH RECURSIVE hooks(webhook_id) AS (
	(SELECT d.webhook_id FROM webhook_deliveries d WHERE d.status = 'pending' ORDER BY d.webhook_id LIMIT 1)
	UNION ALL
	SELECT (SELECT d.webhook_id FROM webhook_deliveries d
		WHERE d.status = 'pending' AND d.webhook_id > h.webhook_id ORDER BY d.webhook_id LIMIT 1)
	FROM hooks h WHERE h.webhook_id IS NOT NULL
), claimed AS (
	UPDATE webhook_deliveries SET lease_until = ?, locked_by = ?
	WHERE id IN (
		SELECT q.id FROM (
			SELECT c.id, c.next_attempt_at, w.workspace_id,
				row_number() OVER (PARTITION BY w.workspace_id ORDER BY c.next_attempt_at, c.id) AS wn
			FROM hooks h
			JOIN webhooks w ON w.id = h.webhook_id %s
			CROSS JOIN LATERAL (
				SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
				WHERE d.webhook_id = h.webhook_id AND d.status = 'pending'
					AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
					AND (w.active OR d.event_type = 'webhook.ping')
				ORDER BY d.next_attempt_at
				LIMIT %s
				FOR UPDATE SKIP LOCKED
			) c
			WHERE TRUE %s
		) q %s
		ORDER BY q.wn, q.next_attempt_at, q.id
		LIMIT ?
	)
	RETURNING *
)
`

// claimedSQL reads what sending the claimed deliveries needs; %s is the
// source of the claimed rows.
const claimedSQL = `SELECT d.*, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, w.headers, e.payload FROM %s d
	JOIN webhooks w ON w.workspace_id = d.workspace_id AND w.id = d.webhook_id
	JOIN events e ON e.id = d.event_id
	%s
	ORDER BY d.next_attempt_at, d.id`

// ClaimDeliveries leases up to r.Limit due deliveries to r.Owner and returns
// them with their webhook's URL and secret and their event's payload. On
// PostgreSQL that is one statement (the lease in a CTE); on SQLite, which
// has no UPDATE in a WITH clause, the lease and then the read.
func (s *DeliveryStore) ClaimDeliveries(ctx context.Context, r ports.ClaimRequest) ([]ports.Dispatch, error) {
	if r.Limit <= 0 {
		return nil, nil
	}
	var rows []struct {
		Row     deliveryRow    `gorm:"embedded"`
		URL     string         `gorm:"column:url"`
		Secret  string         `gorm:"column:secret"`
		Prev    sql.NullString `gorm:"column:previous_secret"`
		PrevExp NullTime       `gorm:"column:previous_secret_expires_at"`
		Headers string         `gorm:"column:headers"`
		Payload []byte         `gorm:"column:payload"`
	}
	if s.db.dialect == DialectPostgres {
		q, args := pgClaim(r)
		if err := s.db.conn(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("store: claim deliveries: %w", err)
		}
	} else {
		q, args := sqliteClaim(r)
		var ids []string
		if err := s.db.conn(ctx).Raw(q, args...).Scan(&ids).Error; err != nil {
			return nil, fmt.Errorf("store: claim deliveries: %w", err)
		}
		if len(ids) == 0 {
			return nil, nil
		}
		q = fmt.Sprintf(claimedSQL, "webhook_deliveries", "WHERE d.id IN ? AND d.locked_by = ?")
		if err := s.db.conn(ctx).Raw(q, ids, r.Owner).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("store: read claimed deliveries: %w", err)
		}
	}
	out := make([]ports.Dispatch, len(rows))
	for i, row := range rows {
		d, err := deliveryFromRow(row.Row)
		if err != nil {
			return nil, fmt.Errorf("store: read claimed deliveries: %w", err)
		}
		secret, previous, err := s.db.openSecrets(d.WebhookID, row.Secret, row.Prev.String)
		if err != nil {
			return nil, err
		}
		headers, err := s.db.openHeaders(d.WebhookID, row.Headers)
		if err != nil {
			return nil, err
		}
		out[i] = ports.Dispatch{
			Delivery: d, URL: row.URL, Secret: secret, Headers: headers,
			PreviousSecret: previous, PreviousSecretExpiresAt: row.PrevExp.Ptr(), Payload: row.Payload,
		}
	}
	return out, nil
}

// pgClaim is pgClaimSQL, then the read of what was claimed, with its
// arguments.
func pgClaim(r ports.ClaimRequest) (string, []any) {
	now := Time(r.Now)
	args := []any{Time(r.LeaseUntil), r.Owner}
	// A webhook's room: Room's, else PerWebhook, else the whole claim.
	perWebhook := r.PerWebhook
	if perWebhook <= 0 {
		perWebhook = r.Limit
	}
	join, limit := "", "?"
	if r.PerWebhook > 0 && len(r.Room) > 0 {
		// VALUES columns take their types from the first row.
		var values string
		values, args = roomValues(r.Room, "(?::text, ?::integer)", args)
		join = "\n\t\t\tLEFT JOIN " + values + " AS room(webhook_id, n) ON room.webhook_id = h.webhook_id"
		limit = "coalesce(room.n, ?)"
	}
	args = append(args, now, now, perWebhook)
	skip, args := skipClause("h.webhook_id", "w.workspace_id", r, args)
	wsRoom, args := workspaceRoom(r, "(?::text, ?::integer)", "column1", "column2", args)
	args = append(args, r.Limit)
	return fmt.Sprintf(pgClaimSQL, join, limit, skip, wsRoom) + fmt.Sprintf(claimedSQL, "claimed", ""), args
}

// sqliteCandidates is how many of the oldest due deliveries a SQLite claim
// chooses from: enough that one workspace's or webhook's backlog leaves
// room for the others' oldest (a workspace at its cap is skipped outright),
// few enough that a claim reads a bounded part of the due index.
func sqliteCandidates(limit int) int { return max(8*limit, 1024) }

// sqliteClaim is claimSQL with its arguments; it returns the ids leased.
func sqliteClaim(r ports.ClaimRequest) (string, []any) {
	now := Time(r.Now)
	args := []any{Time(r.LeaseUntil), r.Owner, now, now}
	skip, args := skipClause("d.webhook_id", "d.workspace_id", r, args)
	args = append(args, sqliteCandidates(r.Limit))
	// The room per webhook: PerWebhook, lowered for those named in Room.
	room := ""
	if r.PerWebhook > 0 {
		room = "WHERE r.n <= ?"
		if len(r.Room) > 0 {
			var values string
			values, args = roomValues(r.Room, "(?, ?)", args)
			room = "LEFT JOIN " + values + " AS h ON h.column1 = r.webhook_id WHERE r.n <= coalesce(h.column2, ?)"
		}
		args = append(args, r.PerWebhook)
	}
	wsRoom, args := workspaceRoom(r, "(?, ?)", "column1", "column2", args)
	args = append(args, r.Limit)
	return fmt.Sprintf(claimSQL, skip, room, wsRoom), args
}

// skipClause is the condition leaving out r's webhooks and workspaces to
// skip (hook and workspace name their columns), with its arguments
// appended to args.
func skipClause(hook, workspace string, r ports.ClaimRequest, args []any) (string, []any) {
	var skip string
	if len(r.SkipWebhooks) > 0 {
		skip += " AND " + hook + " NOT IN ?"
		args = append(args, r.SkipWebhooks)
	}
	if len(r.SkipWorkspaces) > 0 {
		skip += " AND " + workspace + " NOT IN ?"
		args = append(args, r.SkipWorkspaces)
	}
	return skip, args
}

// workspaceRoom is the condition keeping at most each workspace's room of
// the candidates q (by q.wn): WorkspaceRoom's, else PerWorkspace; nothing
// when PerWorkspace is not set. first writes the first VALUES row; id and n
// name the VALUES list's columns (SQLite names them column1, column2).
func workspaceRoom(r ports.ClaimRequest, first, id, n string, args []any) (string, []any) {
	if r.PerWorkspace <= 0 {
		return "", args
	}
	if len(r.WorkspaceRoom) == 0 {
		return "WHERE q.wn <= ?", append(args, r.PerWorkspace)
	}
	values, args := roomValues(r.WorkspaceRoom, first, args)
	return fmt.Sprintf("LEFT JOIN %s AS wsroom ON wsroom.%s = q.workspace_id WHERE q.wn <= coalesce(wsroom.%s, ?)", values, id, n),
		append(args, r.PerWorkspace)
}

// roomValues is a VALUES list of room's (webhook id, room) pairs, the first
// row written as first, with the pairs appended to args.
func roomValues(room map[string]int, first string, args []any) (string, []any) {
	var values strings.Builder
	values.WriteString("(VALUES ")
	row := first
	for id, n := range room {
		values.WriteString(row)
		row = ", (?, ?)"
		args = append(args, id, n)
	}
	values.WriteString(")")
	return values.String(), args
}
