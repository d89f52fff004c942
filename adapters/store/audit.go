package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type auditRow struct {
	ID             string  `gorm:"column:id;primaryKey"`
	WorkspaceID    string  `gorm:"column:workspace_id"`
	Seq            int64   `gorm:"column:seq"`
	Action         string  `gorm:"column:action"`
	ActorType      string  `gorm:"column:actor_type"`
	ActorUserID    *string `gorm:"column:actor_user_id"`
	ActorAPIKeyID  *string `gorm:"column:actor_api_key_id"`
	ActorIP        *string `gorm:"column:actor_ip"`
	ActorUserAgent *string `gorm:"column:actor_user_agent"`
	TargetType     string  `gorm:"column:target_type"`
	TargetID       string  `gorm:"column:target_id"`
	Changes        string  `gorm:"column:changes"`
	RequestID      *string `gorm:"column:request_id"`
	CreatedAt      Time    `gorm:"column:created_at"`
	PrevHash       string  `gorm:"column:prev_hash"`
	Hash           string  `gorm:"column:hash"`
}

func (auditRow) TableName() string { return "audit_events" }

type auditHeadRow struct {
	WorkspaceID string   `gorm:"column:workspace_id;primaryKey"`
	Seq         int64    `gorm:"column:seq"`
	Hash        string   `gorm:"column:hash"`
	LastAt      NullTime `gorm:"column:last_at"`
	PrunedSeq   int64    `gorm:"column:pruned_seq"`
	PrunedHash  string   `gorm:"column:pruned_hash"`
}

func (auditHeadRow) TableName() string { return "audit_heads" }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func auditToRow(e domain.AuditEvent) (auditRow, error) {
	changes, err := json.Marshal(e.Changes)
	if err != nil {
		return auditRow{}, fmt.Errorf("store: audit changes: %w", err)
	}
	return auditRow{
		ID: e.ID, WorkspaceID: e.WorkspaceID, Seq: e.Seq, Action: string(e.Action),
		ActorType: string(e.Actor.Type), ActorUserID: optional(e.Actor.UserID), ActorAPIKeyID: optional(e.Actor.APIKeyID),
		ActorIP: optional(e.Actor.IP), ActorUserAgent: optional(e.Actor.UserAgent),
		TargetType: e.Target.Type, TargetID: e.Target.ID, Changes: string(changes), RequestID: optional(e.RequestID),
		CreatedAt: Time(e.CreatedAt), PrevHash: e.PrevHash, Hash: e.Hash,
	}, nil
}

// auditFromRow rebuilds a record as stored, whatever it holds: the
// verifier, not the reader, decides whether it is intact.
func auditFromRow(r auditRow) (domain.AuditEvent, error) {
	var changes map[string]domain.AuditChange
	if err := json.Unmarshal([]byte(r.Changes), &changes); err != nil {
		return domain.AuditEvent{}, fmt.Errorf("store: audit record %s: changes: %w", r.ID, err)
	}
	return domain.AuditEvent{
		ID: r.ID, WorkspaceID: r.WorkspaceID, Seq: r.Seq, Action: domain.AuditAction(r.Action),
		Actor: domain.AuditActor{Type: domain.AuditActorType(r.ActorType), UserID: orEmpty(r.ActorUserID),
			APIKeyID: orEmpty(r.ActorAPIKeyID), IP: orEmpty(r.ActorIP), UserAgent: orEmpty(r.ActorUserAgent)},
		Target:  domain.AuditTarget{Type: r.TargetType, ID: r.TargetID},
		Changes: changes, RequestID: orEmpty(r.RequestID), CreatedAt: timeOf(r.CreatedAt),
		PrevHash: r.PrevHash, Hash: r.Hash,
	}, nil
}

func headFromRow(r auditHeadRow) domain.AuditHead {
	h := domain.AuditHead{WorkspaceID: r.WorkspaceID, Seq: r.Seq, Hash: r.Hash, PrunedSeq: r.PrunedSeq, PrunedHash: r.PrunedHash}
	if r.LastAt.Valid {
		h.LastAt = r.LastAt.Time.UTC()
	}
	return h
}

// AuditStore keeps the audit log.
type AuditStore struct{ db *DB }

var _ ports.AuditStore = (*AuditStore)(nil)

// Audit is the audit log's repository of db.
func (db *DB) Audit() *AuditStore { return &AuditStore{db: db} }

// LockAuditHead creates the workspace's head when it has none, then reads
// it locked: PostgreSQL's FOR UPDATE holds it until the transaction ends;
// SQLite's transactions hold the one write lock already.
func (s *AuditStore) LockAuditHead(ctx context.Context, workspaceID string) (domain.AuditHead, error) {
	conn := s.db.conn(ctx)
	if err := conn.Exec("INSERT INTO audit_heads (workspace_id) VALUES (?) ON CONFLICT (workspace_id) DO NOTHING", workspaceID).Error; err != nil {
		return domain.AuditHead{}, fmt.Errorf("store: audit head: %w", err)
	}
	q := "SELECT workspace_id, seq, hash, last_at, pruned_seq, pruned_hash FROM audit_heads WHERE workspace_id = ?"
	if s.db.dialect == DialectPostgres {
		q += " FOR UPDATE"
	}
	var row auditHeadRow
	if err := conn.Raw(q, workspaceID).Scan(&row).Error; err != nil {
		return domain.AuditHead{}, fmt.Errorf("store: lock audit head: %w", err)
	}
	return headFromRow(row), nil
}

// AppendAudit inserts e and moves its workspace's head.
func (s *AuditStore) AppendAudit(ctx context.Context, e domain.AuditEvent, head domain.AuditHead) error {
	row, err := auditToRow(e)
	if err != nil {
		return err
	}
	conn := s.db.conn(ctx)
	if err := conn.Create(&row).Error; err != nil {
		return fmt.Errorf("store: append audit record: %w", err)
	}
	err = conn.Model(&auditHeadRow{}).Where("workspace_id = ?", head.WorkspaceID).
		Updates(map[string]any{"seq": head.Seq, "hash": head.Hash, "last_at": NullTimeOf(&head.LastAt)}).Error
	if err != nil {
		return fmt.Errorf("store: move audit head: %w", err)
	}
	return nil
}

// FindAuditEvents lists a workspace's records newest first: in chain order
// (seq descending, which is created_at's too), from the record after
// names, on the index of the filter it names. A cursor's record that
// retention removed has only older ones after it, removed too: the list
// ends there.
func (s *AuditStore) FindAuditEvents(ctx context.Context, f ports.AuditFilter) ([]domain.AuditEvent, error) {
	q := s.db.conn(ctx).Where("workspace_id = ?", f.WorkspaceID)
	if len(f.Actions) > 0 {
		actions := make([]string, len(f.Actions))
		for i, a := range f.Actions {
			actions[i] = string(a)
		}
		q = q.Where("action IN ?", actions)
	}
	if f.ActorID != nil {
		q = q.Where("(actor_user_id = ? OR actor_api_key_id = ?)", *f.ActorID, *f.ActorID)
	}
	if f.TargetID != nil {
		q = q.Where("target_id = ?", *f.TargetID)
	}
	if f.CreatedAfter != nil {
		q = q.Where("created_at > ?", Time(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		q = q.Where("created_at < ?", Time(*f.CreatedBefore))
	}
	if f.After != nil {
		q = q.Where("seq < (SELECT a.seq FROM audit_events a WHERE a.workspace_id = ? AND a.id = ?)", f.WorkspaceID, f.After.ID)
	}
	var rows []auditRow
	if err := q.Order("seq DESC").Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list audit records: %w", err)
	}
	return restoreRows(rows, auditFromRow)
}

// LastAuditFor is the time of the newest record of action about targetID.
func (s *AuditStore) LastAuditFor(ctx context.Context, workspaceID string, action domain.AuditAction, targetID string) (time.Time, error) {
	var rows []auditRow
	err := s.db.conn(ctx).Where("workspace_id = ? AND target_id = ? AND action = ?", workspaceID, targetID, string(action)).
		Order("seq DESC").Limit(1).Find(&rows).Error
	if err != nil || len(rows) == 0 {
		return time.Time{}, err
	}
	return timeOf(rows[0].CreatedAt), nil
}

// AuditHeads lists the chains' heads, by workspace id.
func (s *AuditStore) AuditHeads(ctx context.Context, workspaceID string) ([]domain.AuditHead, error) {
	q := s.db.conn(ctx).Order("workspace_id")
	if workspaceID != "" {
		q = q.Where("workspace_id = ?", workspaceID)
	}
	var rows []auditHeadRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: audit heads: %w", err)
	}
	out := make([]domain.AuditHead, len(rows))
	for i, r := range rows {
		out[i] = headFromRow(r)
	}
	return out, nil
}

// ReadAuditChain reads a workspace's records after afterSeq in seq order.
func (s *AuditStore) ReadAuditChain(ctx context.Context, workspaceID string, afterSeq int64, limit int) ([]domain.AuditEvent, error) {
	var rows []auditRow
	err := s.db.conn(ctx).Where("workspace_id = ? AND seq > ?", workspaceID, afterSeq).Order("seq").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("store: read audit chain: %w", err)
	}
	return restoreRows(rows, auditFromRow)
}

// PruneAudit removes the oldest records created before before, up to
// limit, and moves each touched workspace's pruned anchor to the last
// record removed there, in one transaction. Records go in seq order within
// a workspace (created_at never goes back along a chain: domain.Seal), so
// what is kept is always a whole tail of each chain.
func (s *AuditStore) PruneAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	n := 0
	err := s.db.InTx(ctx, func(ctx context.Context) error {
		conn := s.db.conn(ctx)
		var rows []auditRow
		err := conn.Select("id", "workspace_id", "seq", "hash").Where("created_at < ?", Time(before)).
			Order("created_at, workspace_id, seq").Limit(limit).Find(&rows).Error
		if err != nil || len(rows) == 0 {
			return err
		}
		last := map[string]auditRow{}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
			if r.Seq > last[r.WorkspaceID].Seq {
				last[r.WorkspaceID] = r
			}
		}
		for ws, r := range last {
			err := conn.Model(&auditHeadRow{}).Where("workspace_id = ? AND pruned_seq < ?", ws, r.Seq).
				Updates(map[string]any{"pruned_seq": r.Seq, "pruned_hash": r.Hash}).Error
			if err != nil {
				return fmt.Errorf("store: move audit anchor: %w", err)
			}
		}
		for start := 0; start < len(ids); start += 500 {
			res := conn.Where("id IN ?", ids[start:min(start+500, len(ids))]).Delete(&auditRow{})
			if res.Error != nil {
				return fmt.Errorf("store: prune audit records: %w", res.Error)
			}
			n += int(res.RowsAffected)
		}
		return nil
	})
	return n, err
}
