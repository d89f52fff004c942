package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The audit log (docs/audit.md): who changed a key, a role, a webhook or a
// project, when and from where. Each workspace's records form a hash chain:
// a record's Hash covers its canonical form and its predecessor's hash, so
// a record changed or removed behind the service's back breaks the chain
// from that record on.

// PrefixAudit is the audit events' id prefix.
const PrefixAudit = "aud"

// AuditAction names what a record describes: noun.verb.
type AuditAction string

// The actions recorded.
const (
	AuditAPIKeyCreated     AuditAction = "api_key.created"
	AuditAPIKeyRenamed     AuditAction = "api_key.renamed" //nolint:gosec // an action's name, not a credential
	AuditAPIKeyRevoked     AuditAction = "api_key.revoked"
	AuditAPIKeyAuthFailed  AuditAction = "api_key.authentication_failed" //nolint:gosec // an action's name, not a credential
	AuditUserCreated       AuditAction = "user.created"
	AuditUserRoleChanged   AuditAction = "user.role_changed"
	AuditWebhookCreated    AuditAction = "webhook.created"
	AuditWebhookUpdated    AuditAction = "webhook.updated"
	AuditWebhookDeleted    AuditAction = "webhook.deleted"
	AuditWebhookRotated    AuditAction = "webhook.secret_rotated"
	AuditWebhookDisabled   AuditAction = "webhook.disabled"
	AuditWebhookEnabled    AuditAction = "webhook.enabled"
	AuditProjectCreated    AuditAction = "project.created"
	AuditProjectRenamed    AuditAction = "project.renamed"
	AuditWorkspaceCreated  AuditAction = "workspace.created"
	AuditWorkspaceImported AuditAction = "workspace.imported"
)

// AuditActions lists every action, in the order docs/audit.md gives them.
var AuditActions = []AuditAction{
	AuditAPIKeyCreated, AuditAPIKeyRenamed, AuditAPIKeyRevoked, AuditAPIKeyAuthFailed,
	AuditUserCreated, AuditUserRoleChanged,
	AuditWebhookCreated, AuditWebhookUpdated, AuditWebhookDeleted, AuditWebhookRotated, AuditWebhookDisabled, AuditWebhookEnabled,
	AuditProjectCreated, AuditProjectRenamed, AuditWorkspaceCreated, AuditWorkspaceImported,
}

// ParseAuditAction validates an action filter (param action).
func ParseAuditAction(param, s string) (AuditAction, error) {
	a := AuditAction(s)
	if !slices.Contains(AuditActions, a) {
		names := make([]string, len(AuditActions))
		for i, a := range AuditActions {
			names[i] = string(a)
		}
		return "", Invalid(param, "Must be one of %s.", strings.Join(names, ", "))
	}
	return a, nil
}

// AuditActorType is who made a change.
type AuditActorType string

// The kinds of actors.
const (
	// AuditByAPIKey: a request of the REST or GraphQL API, made with an API
	// key (of UserID).
	AuditByAPIKey AuditActorType = "api_key"
	// AuditByUser: a user acting without a key (no such path today; kept
	// for a signed-in UI).
	AuditByUser AuditActorType = "user"
	// AuditByOperator: the operator's command line, with direct database
	// access.
	AuditByOperator AuditActorType = "operator"
	// AuditBySystem: the service itself (the first start, a webhook
	// disabled for failing).
	AuditBySystem AuditActorType = "system"
)

// AuditActor is who made a change, and from where.
type AuditActor struct {
	Type      AuditActorType `json:"type"`
	UserID    string         `json:"user_id"`
	APIKeyID  string         `json:"api_key_id"`
	IP        string         `json:"ip"`
	UserAgent string         `json:"user_agent"`
}

// AuditTarget is what a change was made to.
type AuditTarget struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// AuditChange is one field's value before and after a change.
type AuditChange struct {
	From any `json:"from"`
	To   any `json:"to"`
}

// Redacted stands for a secret or a header value in an audit record: a
// record never holds one.
const Redacted = "[redacted]"

// AuditEvent is one record of the audit log.
type AuditEvent struct {
	ID          string
	WorkspaceID string
	// Seq is the record's place in its workspace's chain: 1, 2, ….
	Seq       int64
	Action    AuditAction
	Actor     AuditActor
	Target    AuditTarget
	Changes   map[string]AuditChange
	RequestID string
	CreatedAt time.Time
	// PrevHash is the hash of the record before it in its workspace's
	// chain ("" for the first); Hash is this record's.
	PrevHash string
	Hash     string
}

// Position is the record's place in the audit list (newest first).
func (e AuditEvent) Position() Position { return Position{At: e.CreatedAt, ID: e.ID} }

// NewAuditEvent is a record about to be appended: sealed (Seq, PrevHash,
// Hash) by Seal when its workspace's chain takes it.
func NewAuditEvent(id, workspaceID string, action AuditAction, actor AuditActor, target AuditTarget, changes map[string]AuditChange, requestID string) AuditEvent {
	if changes == nil {
		changes = map[string]AuditChange{}
	}
	return AuditEvent{
		ID: id, WorkspaceID: workspaceID, Action: action, Actor: actor, Target: target,
		Changes: changes, RequestID: requestID,
	}
}

// AuditHead is the end of a workspace's chain: the last record's place and
// hash (0 and "" for an empty chain). PrunedSeq and PrunedHash are those of
// the last record retention removed, from which the oldest kept record's
// PrevHash must follow.
type AuditHead struct {
	WorkspaceID string
	Seq         int64
	Hash        string
	LastAt      time.Time
	PrunedSeq   int64
	PrunedHash  string
}

// Seal places e after head in its chain: its Seq, its time (never before
// the previous record's, so the list's newest-first order is the chain's
// order), its PrevHash and its Hash. It returns the sealed record and the
// new head.
func (e AuditEvent) Seal(head AuditHead, now time.Time) (AuditEvent, AuditHead) {
	e.Seq = head.Seq + 1
	e.CreatedAt = Timestamp(now)
	if e.CreatedAt.Before(head.LastAt) {
		e.CreatedAt = head.LastAt
	}
	e.PrevHash = head.Hash
	e.Hash = e.ComputeHash()
	head.Seq, head.Hash, head.LastAt = e.Seq, e.Hash, e.CreatedAt
	return e, head
}

// ComputeHash is the record's hash: hex SHA-256 of its PrevHash, a newline
// and its canonical form.
func (e AuditEvent) ComputeHash() string {
	h := sha256.New()
	h.Write([]byte(e.PrevHash))
	h.Write([]byte{'\n'})
	h.Write(e.Canonical())
	return hex.EncodeToString(h.Sum(nil))
}

// Canonical is the record's canonical form, what its hash covers: a JSON
// object with its fields in a fixed order (maps' keys sorted, as
// encoding/json writes them), times in the API's format. It holds every
// field but the hash itself; a change to any of them changes it.
func (e AuditEvent) Canonical() []byte {
	var b bytes.Buffer
	field := func(name string, v any) {
		if b.Len() > 0 {
			b.WriteByte(',')
		} else {
			b.WriteByte('{')
		}
		k, _ := json.Marshal(name)
		val, err := json.Marshal(v)
		if err != nil {
			val = []byte(fmt.Sprintf("%q", fmt.Sprint(v)))
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
	}
	field("id", e.ID)
	field("workspace_id", e.WorkspaceID)
	field("seq", e.Seq)
	field("action", e.Action)
	field("actor", e.Actor)
	field("target", e.Target)
	field("changes", e.Changes)
	field("request_id", e.RequestID)
	field("created_at", FormatTime(e.CreatedAt))
	field("prev_hash", e.PrevHash)
	b.WriteByte('}')
	return b.Bytes()
}

// AuditBreak is where a chain does not hold.
type AuditBreak struct {
	WorkspaceID string
	ID          string
	Seq         int64
	Reason      string
}

// String says where and why, in one line.
func (b *AuditBreak) String() string {
	return fmt.Sprintf("audit chain of %s breaks at %s (#%d): %s", b.WorkspaceID, b.ID, b.Seq, b.Reason)
}

// AuditVerifier checks one workspace's chain, record after record in Seq
// order, from the head's pruned anchor.
type AuditVerifier struct {
	head    AuditHead
	prevSeq int64
	prev    string
	n       int64
}

// NewAuditVerifier starts checking the chain whose head is head.
func NewAuditVerifier(head AuditHead) *AuditVerifier {
	return &AuditVerifier{head: head, prevSeq: head.PrunedSeq, prev: head.PrunedHash}
}

// Next checks the next record of the chain.
func (v *AuditVerifier) Next(e AuditEvent) *AuditBreak {
	fail := func(format string, args ...any) *AuditBreak {
		return &AuditBreak{WorkspaceID: v.head.WorkspaceID, ID: e.ID, Seq: e.Seq, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case e.Seq != v.prevSeq+1:
		return fail("follows #%d: a record is missing before it", v.prevSeq)
	case e.PrevHash != v.prev:
		return fail("its prev_hash is not the hash of the record before it")
	case e.ComputeHash() != e.Hash:
		return fail("its hash does not match its contents: the record was changed")
	}
	v.prevSeq, v.prev = e.Seq, e.Hash
	v.n++
	return nil
}

// End checks that the chain ended at its head, and returns the records
// checked.
func (v *AuditVerifier) End() (int64, *AuditBreak) {
	if v.prevSeq != v.head.Seq || v.prev != v.head.Hash {
		return v.n, &AuditBreak{WorkspaceID: v.head.WorkspaceID, Seq: v.prevSeq + 1,
			Reason: fmt.Sprintf("the chain ends at #%d but its head is #%d: records were removed from its end", v.prevSeq, v.head.Seq)}
	}
	return v.n, nil
}
