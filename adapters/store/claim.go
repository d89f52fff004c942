package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/worktrack/worktrack/core/ports"
)

// claimedColumns read what sending the claimed deliveries needs, from the
// claimed rows (d) joined with their webhook (w) and event (e), in the
// order scanClaimed reads them.
const claimedColumns = `SELECT d.id, d.workspace_id, d.webhook_id, d.event_id, d.event_type, d.status, d.attempts,
	d.last_attempt_at, d.last_status_code, d.last_error, d.next_attempt_at, d.window_start, d.lease_until, d.locked_by,
	d.created_at, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, w.headers, e.payload, e.trace_parent`

// writeClaimed writes the read of the claimed deliveries from source, the
// claimed rows; where, when given, writes its condition.
func (q *sqlBuilder) writeClaimed(source string, where func()) {
	q.write(claimedColumns + " FROM " + source + ` d
	JOIN webhooks w ON w.workspace_id = d.workspace_id AND w.id = d.webhook_id
	JOIN events e ON e.id = d.event_id`)
	if where != nil {
		q.write("\n\tWHERE ")
		where()
	}
	q.write("\n\tORDER BY d.next_attempt_at, d.id")
}

// ClaimDeliveries leases up to r.Limit due deliveries to r.Owner and returns
// them with their webhook's URL and secret and their event's payload. On
// PostgreSQL that is one statement (the lease in a CTE); on SQLite, which
// has no UPDATE in a WITH clause, the lease and then the read.
//
// On PostgreSQL a claim has the API's statement deadline though it runs
// for no workspace: one stuck behind a lock or on a stalled server is
// stopped (rolled back; rows it leased and had not yet sent are claimed
// again once their lease lapses) and the dispatcher claims again. SQLite's
// driver stops a statement only before it starts: a claim waiting for the
// write lock would lease its deliveries and then be called stopped, parking
// them for a lease; there a claim waits as any writer does (busy_timeout).
func (s *DeliveryStore) ClaimDeliveries(ctx context.Context, r ports.ClaimRequest) ([]ports.Dispatch, error) {
	if r.Limit <= 0 {
		return nil, nil
	}
	if s.db.dialect != DialectPostgres {
		return s.claim(ctx, r)
	}
	ctx, end := s.db.claimDeadline(ctx)
	out, err := s.claim(ctx, r)
	return out, end(err)
}

func (s *DeliveryStore) claim(ctx context.Context, r ports.ClaimRequest) ([]ports.Dispatch, error) {
	var read *sqlBuilder
	if s.db.dialect == DialectPostgres {
		read = pgClaim(r)
	} else {
		// A claim with nothing to lease does not wait for the writer. The
		// dispatcher claims at every commit, each workspace's: a claim for
		// a flood's commits, whose deliveries are at their cap, waited a
		// bulk creation's transaction for nothing, and another workspace's
		// delivery committed meanwhile waited for it and then for the next.
		due := sqliteAnyDue(r)
		var anyDue bool
		if err := s.db.read(ctx, due.sql.String(), due.args, func(rows rowScanner) error {
			for rows.Next() {
				if err := rows.Scan(&anyDue); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: claim deliveries: %w", err)
		}
		if !anyDue {
			return nil, nil
		}
		q := sqliteClaim(r)
		var ids []string
		// The lease is a write: it waits for the writer in a turn of its
		// own (claimFlow), as a transaction does, rather than in SQLite's
		// busy handler, which a stream of other writers could keep it in.
		err := func() error {
			release, err := s.db.takeWriterAs(ctx, claimFlow)
			if err != nil {
				return err
			}
			defer release()
			return s.db.read(ctx, q.sql.String(), q.args, func(rows rowScanner) error {
				for rows.Next() {
					var id string
					if err := rows.Scan(&id); err != nil {
						return err
					}
					ids = append(ids, id)
				}
				return nil
			})
		}()
		if err != nil {
			return nil, fmt.Errorf("store: claim deliveries: %w", err)
		}
		if len(ids) == 0 {
			return nil, nil
		}
		read = &sqlBuilder{dialect: s.db.dialect}
		read.writeClaimed("webhook_deliveries", func() {
			writeIn(read, "d.id", ids)
			read.write(" AND d.locked_by = ?", r.Owner)
		})
	}
	args := read.args
	if s.db.dialect == DialectPostgres {
		// Planned for this claim's values and the table as it is now, not
		// once: pgx prepares and caches every statement, and after five
		// runs PostgreSQL may settle a prepared statement on a generic plan.
		// The claim's was settled while the table was nearly empty (a new
		// database's first deliveries): four sequential scans of the
		// deliveries a claim, kept as the table grew until autovacuum next
		// analyzed it. 23,000 deliveries in, a claim took 60-370 ms and the
		// backlog grew.
		args = append([]any{pgx.QueryExecModeExec}, args...)
	}
	var out []ports.Dispatch
	if err := s.db.read(ctx, read.sql.String(), args, s.scanClaimed(&out)); err != nil {
		return nil, fmt.Errorf("store: claim deliveries: %w", err)
	}
	return out, nil
}

// scanClaimed reads claimedColumns field by field into Dispatches (GORM's
// reflective Scan cost a claim more than its statement's round trip),
// opening each webhook's sealed secrets and headers once per claim however
// many of its deliveries the claim took.
func (s *DeliveryStore) scanClaimed(out *[]ports.Dispatch) func(rowScanner) error {
	type opened struct {
		secret, previous string
		headers          map[string]string
	}
	return func(rows rowScanner) error {
		hooks := map[string]opened{}
		for rows.Next() {
			var (
				r                    deliveryRow
				url, secret, headers string
				prev                 sql.NullString
				prevExp              NullTime
				payload              []byte
				traceParent          sql.NullString
			)
			if err := rows.Scan(&r.ID, &r.WorkspaceID, &r.WebhookID, &r.EventID, &r.EventType, &r.Status, &r.Attempts,
				&r.LastAttemptAt, &r.LastStatusCode, &r.LastError, &r.NextAttemptAt, &r.WindowStart, &r.LeaseUntil, &r.LockedBy,
				&r.CreatedAt, &url, &secret, &prev, &prevExp, &headers, &payload, &traceParent); err != nil {
				return err
			}
			d, err := deliveryFromRow(r)
			if err != nil {
				return fmt.Errorf("read claimed deliveries: %w", err)
			}
			o, ok := hooks[d.WebhookID]
			if !ok {
				if o.secret, o.previous, err = s.db.openSecrets(d.WebhookID, secret, prev.String); err != nil {
					return err
				}
				if o.headers, err = s.db.openHeaders(d.WebhookID, headers); err != nil {
					return err
				}
				hooks[d.WebhookID] = o
			}
			*out = append(*out, ports.Dispatch{
				Delivery: d, URL: url, Secret: o.secret, Headers: o.headers,
				PreviousSecret: o.previous, PreviousSecretExpiresAt: prevExp.Ptr(), Payload: payload,
				TraceParent: traceParent.String,
			})
		}
		return nil
	}
}

// pgClaim leases due deliveries on PostgreSQL, webhook by webhook, so
// that what a claim reads is bounded by the room it offers, not by the
// backlog of a webhook that answers slowly: reading the oldest due
// deliveries of all webhooks, a claim had to pass over every due delivery
// of a slow webhook (skipped, at its cap) to reach a fast one's. One
// statement, the lease in a CTE and then the read of what was leased:
//
//   - hooks: the webhooks with pending deliveries, by a skip scan of
//     webhook_deliveries_webhook_due_idx (one index probe per webhook);
//   - for each one not skipped (nor its workspace), its oldest due
//     deliveries up to its room (Room's, else PerWebhook, else the whole
//     claim; an inactive webhook's pings only, filtered before the limit
//     so that older deliveries waiting for it to be enabled again cannot
//     crowd a ping out), by a range scan of the same index, locked FOR
//     UPDATE SKIP LOCKED: concurrent claims pass over each other's rows
//     instead of waiting or taking them too, and the webhooks rows are
//     not locked;
//   - of those, at most each workspace's room (wn, row_number per
//     workspace), each workspace's oldest first and then its next ones
//     (ordered by wn), up to Limit, are leased. A candidate left out is not
//     updated, and its row lock ends with the statement.
func pgClaim(r ports.ClaimRequest) *sqlBuilder {
	q := &sqlBuilder{dialect: DialectPostgres}
	now := Time(r.Now)
	perWebhook := r.PerWebhook
	if perWebhook <= 0 {
		perWebhook = r.Limit
	}
	q.write(`WITH RECURSIVE hooks(webhook_id) AS (
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
			JOIN webhooks w ON w.id = h.webhook_id`, Time(r.LeaseUntil), r.Owner)
	roomed := r.PerWebhook > 0 && len(r.Room) > 0
	if roomed {
		q.write("\n\t\t\tLEFT JOIN ")
		q.roomValues(r.Room)
		q.write(" AS room(webhook_id, n) ON room.webhook_id = h.webhook_id")
	}
	q.write(`
			CROSS JOIN LATERAL (
				SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
				WHERE d.webhook_id = h.webhook_id AND d.status = 'pending'
					AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
					AND (w.active OR d.event_type = 'webhook.ping')
				ORDER BY d.next_attempt_at
				LIMIT `, now, now)
	if roomed {
		q.write("coalesce(room.n, ?)", perWebhook)
	} else {
		q.write("?", perWebhook)
	}
	q.write(`
				FOR UPDATE SKIP LOCKED
			) c
			WHERE TRUE`)
	q.skip("h.webhook_id", "w.workspace_id", r)
	q.write("\n\t\t) q")
	q.workspaceRoom(r)
	q.write(`
		ORDER BY q.wn, q.next_attempt_at, q.id
		LIMIT ?
	)
	RETURNING *
)
`, r.Limit)
	q.writeClaimed("claimed", nil)
	return q
}

// sqliteCandidates is how many of the webhooks' oldest due deliveries a
// SQLite claim chooses from, the oldest first: enough that the webhooks of
// one workspace leave room for the others' oldest (a workspace at its cap
// is skipped outright), few enough that a claim sorts a bounded number.
func sqliteCandidates(limit int) int { return max(8*limit, 1024) }

// sqliteClaim leases due deliveries of active webhooks (and pings, which
// an inactive webhook is sent too) in one statement, on SQLite, under the
// database's single write lock: each webhook's oldest due deliveries
// (sqliteDue), the oldest of them all first (at most sqliteCandidates), of
// which at most the room of each webhook (n, row_number per webhook;
// PerWebhook, lowered for those named in Room) and of each workspace (wn),
// each workspace's oldest first (interleaved by wn). It returns the ids
// leased; SQLite has no UPDATE in a WITH clause, so the read of what was
// leased follows.
func sqliteClaim(r ports.ClaimRequest) *sqlBuilder {
	q := &sqlBuilder{dialect: DialectSQLite}
	q.write(`UPDATE webhook_deliveries SET lease_until = ?, locked_by = ?
WHERE id IN (
	SELECT q.id FROM (
		SELECT r.id, r.workspace_id, r.next_attempt_at,
			row_number() OVER (PARTITION BY r.workspace_id ORDER BY r.next_attempt_at, r.id) AS wn
		FROM (
			SELECT c.id, c.webhook_id, c.workspace_id, c.next_attempt_at,
				row_number() OVER (PARTITION BY c.webhook_id ORDER BY c.next_attempt_at, c.id) AS n
			FROM (
				`, Time(r.LeaseUntil), r.Owner)
	q.sqliteDue(r)
	q.write(`
				ORDER BY d.next_attempt_at, d.id
				LIMIT ?
			) c
		) r`, sqliteCandidates(r.Limit))
	if r.PerWebhook > 0 {
		if len(r.Room) > 0 {
			q.write(" LEFT JOIN ")
			q.roomValues(r.Room)
			q.write(" AS h ON h.column1 = r.webhook_id WHERE r.n <= coalesce(h.column2, ?)", r.PerWebhook)
		} else {
			q.write(" WHERE r.n <= ?", r.PerWebhook)
		}
	}
	q.write("\n\t) q")
	q.workspaceRoom(r)
	q.write(`
	ORDER BY q.wn, q.next_attempt_at, q.id
	LIMIT ?
)
RETURNING id`, r.Limit)
	return q
}

// sqliteDue writes the read of the deliveries a SQLite claim chooses
// from: due, not leased, of an active webhook (or pings), but none of the
// webhooks and workspaces r skips; of each webhook its oldest due, at most
// PerWebhook. As on PostgreSQL, it goes webhook by webhook (hooks walks the
// webhooks with pending deliveries, one seek each in
// webhook_deliveries_webhook_due_idx), so its cost grows with the webhooks,
// not with their backlogs: read in due order over all webhooks, a claim
// passed every due delivery of a workspace it skipped, at its cap, to find
// another's (0.2 s for a backlog of 600,000), and it did so holding the
// writer.
func (q *sqlBuilder) sqliteDue(r ports.ClaimRequest) {
	now := Time(r.Now)
	perWebhook := r.PerWebhook
	if perWebhook <= 0 {
		perWebhook = r.Limit
	}
	q.write(`WITH RECURSIVE hooks(webhook_id) AS (
					SELECT (SELECT min(d.webhook_id) FROM webhook_deliveries d INDEXED BY webhook_deliveries_webhook_due_idx
						WHERE d.status = 'pending')
					UNION ALL
					SELECT (SELECT min(d.webhook_id) FROM webhook_deliveries d INDEXED BY webhook_deliveries_webhook_due_idx
						WHERE d.status = 'pending' AND d.webhook_id > h.webhook_id)
					FROM hooks h WHERE h.webhook_id IS NOT NULL
				)
				SELECT d.id, d.webhook_id, d.workspace_id, d.next_attempt_at FROM hooks h
				JOIN webhooks w ON w.id = h.webhook_id
				JOIN webhook_deliveries d ON d.id IN (
					SELECT x.id FROM webhook_deliveries x
					WHERE x.webhook_id = h.webhook_id AND x.status = 'pending'
						AND x.next_attempt_at <= ? AND (x.lease_until IS NULL OR x.lease_until < ?)
						AND (w.active OR x.event_type = 'webhook.ping')
					ORDER BY x.next_attempt_at
					LIMIT ?)
				WHERE TRUE`, now, now, perWebhook)
	q.skip("h.webhook_id", "w.workspace_id", r)
}

// sqliteAnyDue is whether a SQLite claim of r would lease anything: a read,
// which runs beside the writer. Every webhook and workspace r does not skip
// has room for one at least.
func sqliteAnyDue(r ports.ClaimRequest) *sqlBuilder {
	q := &sqlBuilder{dialect: DialectSQLite}
	q.write("SELECT EXISTS (")
	q.sqliteDue(r)
	q.write(")")
	return q
}

// skip writes the conditions leaving out r's webhooks and workspaces to
// skip; hook and workspace name their columns.
func (q *sqlBuilder) skip(hook, workspace string, r ports.ClaimRequest) {
	if len(r.SkipWebhooks) > 0 {
		q.write(" AND ")
		writeNotIn(q, hook, r.SkipWebhooks)
	}
	if len(r.SkipWorkspaces) > 0 {
		q.write(" AND ")
		writeNotIn(q, workspace, r.SkipWorkspaces)
	}
}

// workspaceRoom writes the condition keeping at most each workspace's room
// of the candidates q (by q.wn): WorkspaceRoom's, else PerWorkspace;
// nothing when PerWorkspace is not set.
func (q *sqlBuilder) workspaceRoom(r ports.ClaimRequest) {
	switch {
	case r.PerWorkspace <= 0:
	case len(r.WorkspaceRoom) == 0:
		q.write(" WHERE q.wn <= ?", r.PerWorkspace)
	default:
		q.write(" LEFT JOIN ")
		q.roomValues(r.WorkspaceRoom)
		// Both databases name a VALUES list's columns column1, column2.
		q.write(" AS wsroom ON wsroom.column1 = q.workspace_id WHERE q.wn <= coalesce(wsroom.column2, ?)", r.PerWorkspace)
	}
}

// roomValues writes a VALUES list of room's (id, room) pairs.
func (q *sqlBuilder) roomValues(room map[string]int) {
	ids := make([]string, 0, len(room))
	for id := range room {
		ids = append(ids, id)
	}
	q.write("(VALUES ")
	q.rows(len(ids), []string{"text", "integer"}, func(i int) []any { return []any{ids[i], room[ids[i]]} })
	q.write(")")
}
