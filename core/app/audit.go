package app

import (
	"context"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// auditLog appends the records of the audit log (docs/audit.md) for the
// services that make the changes, in their transactions: a change that
// rolls back leaves no record, and a record never exists without its change.
type auditLog struct {
	store ports.AuditStore
	ids   ports.IDGenerator
	clock ports.Clock
}

// record appends one record to its workspace's chain. Call it inside
// Transactor.InTx, as the transaction's last write: it locks the chain's
// head until the commit, so that concurrent changes in a workspace take
// their places one after another, and taking that lock last keeps it from
// ordering against the rows the change locked.
func (l auditLog) record(ctx context.Context, workspaceID string, action domain.AuditAction, actor domain.AuditActor,
	target domain.AuditTarget, changes map[string]domain.AuditChange) error {
	head, err := l.store.LockAuditHead(ctx, workspaceID)
	if err != nil {
		return err
	}
	e := domain.NewAuditEvent(l.ids.NewID(domain.PrefixAudit), workspaceID, action, actor, target, changes,
		ports.RequestInfoFrom(ctx).RequestID)
	sealed, next := e.Seal(head, l.clock.Now())
	return l.store.AppendAudit(ctx, sealed, next)
}

// auditActor is who a request acts as: its API key (and the key's user),
// from the address and user agent the edge saw.
func auditActor(ctx context.Context, a domain.Actor) domain.AuditActor {
	info := ports.RequestInfoFrom(ctx)
	return domain.AuditActor{Type: domain.AuditByAPIKey, UserID: a.UserID, APIKeyID: a.KeyID, IP: info.IP, UserAgent: info.UserAgent}
}

// operatorActor is the operator's command line; its user agent names the
// sub-command when the caller set one (WithRequestInfo).
func operatorActor(ctx context.Context) domain.AuditActor {
	info := ports.RequestInfoFrom(ctx)
	return domain.AuditActor{Type: domain.AuditByOperator, IP: info.IP, UserAgent: info.UserAgent}
}

// systemActor is the service itself.
var systemActor = domain.AuditActor{Type: domain.AuditBySystem}

// Audit is the audit log's use cases: reading it (admins, with audit:read),
// verifying its chains and pruning it (the operator and the server).
type Audit struct {
	d   AuditDeps
	log auditLog
}

// AuditDeps are the ports Audit uses.
type AuditDeps struct {
	Store ports.AuditStore
	Clock ports.Clock
	IDs   ports.IDGenerator
}

// NewAudit makes the audit log's use cases.
func NewAudit(d AuditDeps) *Audit {
	mustHave(map[string]any{"Store": d.Store, "Clock": d.Clock, "IDs": d.IDs})
	return &Audit{d: d, log: auditLog{store: d.Store, ids: d.IDs, clock: d.Clock}}
}

// AuditListRequest filters the audit log (docs/audit.md#reading-it).
type AuditListRequest struct {
	Page          domain.PageRequest
	Actions       []string
	ActorID       *string
	TargetID      *string
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
}

// List pages through the caller's workspace's audit log, newest first. It
// needs the admin role and the audit:read scope; a key restricted to
// projects reads none of it (permission_denied). Filters are
// validation_failed naming their parameter.
func (s *Audit) List(ctx context.Context, a domain.Actor, r AuditListRequest) (domain.Page[domain.AuditEvent], error) {
	var none domain.Page[domain.AuditEvent]
	if err := a.Require(domain.ScopeAuditRead); err != nil {
		return none, err
	}
	if a.Restricted() {
		return none, domain.Forbidden("A key restricted to projects cannot read the audit log, which concerns the whole workspace.")
	}
	f := ports.AuditFilter{WorkspaceID: a.WorkspaceID, CreatedAfter: r.CreatedAfter, CreatedBefore: r.CreatedBefore}
	scope := "audit:" + a.WorkspaceID
	for _, name := range r.Actions {
		act, err := domain.ParseAuditAction("action", name)
		if err != nil {
			return none, err
		}
		f.Actions = append(f.Actions, act)
		scope += ":a=" + name
	}
	if len(f.Actions) > 20 {
		return none, domain.Invalid("action", "At most 20 actions.")
	}
	if r.ActorID != nil {
		if !domain.IsID(*r.ActorID, domain.PrefixUser) && !domain.IsID(*r.ActorID, domain.PrefixAPIKey) {
			return none, domain.Invalid("actor_id", "Must be the id of a user (usr_…) or an API key (key_…).")
		}
		f.ActorID = r.ActorID
		scope += ":actor=" + *r.ActorID
	}
	if r.TargetID != nil {
		if !domain.IsAnyID(*r.TargetID) {
			return none, domain.Invalid("target_id", "Must be the id of a resource (prj_…, whk_…, key_…, usr_…, wsp_…).")
		}
		f.TargetID = r.TargetID
		scope += ":target=" + *r.TargetID
	}
	for _, t := range []struct {
		param string
		v     *time.Time
	}{{"created_after", r.CreatedAfter}, {"created_before", r.CreatedBefore}} {
		if t.v == nil {
			continue
		}
		if err := domain.CheckTime(t.param, *t.v); err != nil {
			return none, err
		}
		scope += ":" + t.param + "=" + domain.FormatTime(*t.v)
	}
	k, err := r.Page.Keyset(scope)
	if err != nil {
		return none, err
	}
	f.After, f.Limit = k.After, k.Rows()
	events, err := s.d.Store.FindAuditEvents(ctx, f)
	if err != nil {
		return none, err
	}
	return domain.NewPage(events, k, domain.AuditEvent.Position), nil
}

// AuditReport is what Verify found: the workspaces and records checked,
// and the first record that does not hold, if any.
type AuditReport struct {
	Workspaces int
	Records    int64
	Break      *domain.AuditBreak
}

// Verify checks every workspace's chain (one workspace's when workspaceID
// is set), record after record from its oldest kept one, and stops at the
// first record that does not hold.
func (s *Audit) Verify(ctx context.Context, workspaceID string) (AuditReport, error) {
	var rep AuditReport
	heads, err := s.d.Store.AuditHeads(ctx, workspaceID)
	if err != nil {
		return rep, err
	}
	for _, h := range heads {
		rep.Workspaces++
		v := domain.NewAuditVerifier(h)
		for after := h.PrunedSeq; ; {
			batch, err := s.d.Store.ReadAuditChain(ctx, h.WorkspaceID, after, 1000)
			if err != nil {
				return rep, err
			}
			for _, e := range batch {
				if b := v.Next(e); b != nil {
					rep.Break = b
					return rep, nil
				}
				rep.Records++
				after = e.Seq
			}
			if len(batch) < 1000 {
				break
			}
		}
		if _, b := v.End(); b != nil {
			rep.Break = b
			return rep, nil
		}
	}
	return rep, nil
}

// pruneBatch is how many records one statement of Prune removes.
const pruneBatch = 1000

// Prune removes the records older than retention, a batch of pruneBatch
// per short transaction, and returns how many it removed. Each workspace's
// head keeps the last removed record's place and hash, so the oldest kept
// record still verifies.
func (s *Audit) Prune(ctx context.Context, retention time.Duration) (int, error) {
	before := s.d.Clock.Now().Add(-retention)
	total := 0
	for {
		n, err := s.d.Store.PruneAudit(ctx, before, pruneBatch)
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}
