package wire

import "github.com/worktrack/worktrack/core/domain"

// AuditEvent is a record of the audit log as both APIs show it
// (docs/audit.md): every field, the chain's included (seq, prev_hash,
// hash), so that a customer can check the chain from their own copy.
type AuditEvent struct {
	ID        string                        `json:"id"`
	Object    string                        `json:"object"`
	Action    string                        `json:"action"`
	Actor     AuditActor                    `json:"actor"`
	Target    domain.AuditTarget            `json:"target"`
	Changes   map[string]domain.AuditChange `json:"changes"`
	RequestID *string                       `json:"request_id"`
	CreatedAt string                        `json:"created_at"`
	Seq       int64                         `json:"seq"`
	PrevHash  string                        `json:"prev_hash"`
	Hash      string                        `json:"hash"`
}

// AuditActor is who made a change; what is not known is null.
type AuditActor struct {
	Type      string  `json:"type"`
	UserID    *string `json:"user_id"`
	APIKeyID  *string `json:"api_key_id"`
	IP        *string `json:"ip"`
	UserAgent *string `json:"user_agent"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// FromAuditEvent renders a record.
func FromAuditEvent(e domain.AuditEvent) AuditEvent {
	return AuditEvent{
		ID: e.ID, Object: "audit_event", Action: string(e.Action),
		Actor: AuditActor{Type: string(e.Actor.Type), UserID: nullable(e.Actor.UserID), APIKeyID: nullable(e.Actor.APIKeyID),
			IP: nullable(e.Actor.IP), UserAgent: nullable(e.Actor.UserAgent)},
		Target: e.Target, Changes: e.Changes, RequestID: nullable(e.RequestID), CreatedAt: Time(e.CreatedAt),
		Seq: e.Seq, PrevHash: e.PrevHash, Hash: e.Hash,
	}
}
