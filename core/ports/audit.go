package ports

import (
	"context"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// AuditStore keeps the audit log (docs/audit.md). Implemented by
// adapters/store.
type AuditStore interface {
	// LockAuditHead returns the end of a workspace's chain, locked until
	// ctx's transaction ends, so that the records of concurrent changes in
	// one workspace take their places one after another and the chain
	// cannot fork. A workspace without records has a zero head. Call it
	// inside Transactor.InTx.
	LockAuditHead(ctx context.Context, workspaceID string) (domain.AuditHead, error)
	// AppendAudit inserts a sealed record and moves its workspace's head to
	// head, in ctx's transaction (the one that locked the head).
	AppendAudit(ctx context.Context, e domain.AuditEvent, head domain.AuditHead) error
	// FindAuditEvents lists a workspace's records newest first, filtered.
	FindAuditEvents(ctx context.Context, f AuditFilter) ([]domain.AuditEvent, error)
	// LastAuditFor is the time of the newest record of action about
	// targetID in a workspace, or zero.
	LastAuditFor(ctx context.Context, workspaceID string, action domain.AuditAction, targetID string) (time.Time, error)
	// AuditHeads lists the heads of every workspace's chain (one
	// workspace's when workspaceID is set), for verification.
	AuditHeads(ctx context.Context, workspaceID string) ([]domain.AuditHead, error)
	// ReadAuditChain reads up to limit records of a workspace's chain after
	// seq, in Seq order.
	ReadAuditChain(ctx context.Context, workspaceID string, afterSeq int64, limit int) ([]domain.AuditEvent, error)
	// PruneAudit removes up to limit records created before before, oldest
	// first (across workspaces), in one short transaction, and records in
	// each workspace's head the last removed record's place and hash, from
	// which the oldest kept record still verifies. It returns how many it
	// removed.
	PruneAudit(ctx context.Context, before time.Time, limit int) (int, error)
}

// AuditFilter selects audit records: one workspace's, newest first, after
// a position of the list (exclusive), at most Limit.
type AuditFilter struct {
	WorkspaceID   string
	Actions       []domain.AuditAction
	ActorID       *string // a user's or an API key's id
	TargetID      *string
	CreatedAfter  *time.Time // exclusive
	CreatedBefore *time.Time // exclusive
	After         *domain.Position
	Limit         int
}

// RequestInfo is what the edge knows of a request that a record of the
// audit log keeps: the client's address and user agent, and the request's
// id. The edge puts it in the request's context (WithRequestInfo).
type RequestInfo struct {
	IP        string
	UserAgent string
	RequestID string
}

type requestInfoKey struct{}

// WithRequestInfo carries i in ctx.
func WithRequestInfo(ctx context.Context, i RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, i)
}

// RequestInfoFrom is the RequestInfo ctx carries (zero without one).
func RequestInfoFrom(ctx context.Context) RequestInfo {
	i, _ := ctx.Value(requestInfoKey{}).(RequestInfo)
	return i
}
