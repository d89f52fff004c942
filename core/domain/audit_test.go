package domain_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// chain seals n records of one workspace, a second apart (one of them
// given a time before its predecessor's, which Seal keeps in order).
func chain(t *testing.T, n int) ([]domain.AuditEvent, domain.AuditHead) {
	t.Helper()
	head := domain.AuditHead{WorkspaceID: "wsp_1"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var out []domain.AuditEvent
	for i := range n {
		e := domain.NewAuditEvent(domain.NewID(domain.PrefixAudit), "wsp_1", domain.AuditAPIKeyCreated,
			domain.AuditActor{Type: domain.AuditByAPIKey, UserID: "usr_1", APIKeyID: "key_1", IP: "203.0.113.1", UserAgent: "curl/8"},
			domain.AuditTarget{Type: domain.AuditTargetAPIKey, ID: "key_2"},
			map[string]domain.AuditChange{"name": {From: nil, To: "ci"}, "scopes": {From: nil, To: []string{"tasks:read"}}}, "req_1")
		when := at.Add(time.Duration(i) * time.Second)
		if i == 2 {
			when = at.Add(-time.Hour) // a clock that went back
		}
		var sealed domain.AuditEvent
		sealed, head = e.Seal(head, when)
		out = append(out, sealed)
	}
	return out, head
}

func verify(records []domain.AuditEvent, head domain.AuditHead) *domain.AuditBreak {
	v := domain.NewAuditVerifier(head)
	for _, e := range records {
		if b := v.Next(e); b != nil {
			return b
		}
	}
	_, b := v.End()
	return b
}

// A sealed chain verifies; its records follow one another in seq, hash and
// time; a record changed, removed, reordered or cut from the end is named.
func TestAuditChain(t *testing.T) {
	records, head := chain(t, 5)
	if b := verify(records, head); b != nil {
		t.Fatalf("an untouched chain: %v", b)
	}
	for i, e := range records {
		if e.Seq != int64(i+1) || (i > 0 && (e.PrevHash != records[i-1].Hash || e.CreatedAt.Before(records[i-1].CreatedAt))) {
			t.Fatalf("record %d: seq %d, prev %q, at %v", i, e.Seq, e.PrevHash, e.CreatedAt)
		}
	}
	if records[0].PrevHash != "" || len(records[0].Hash) != 64 {
		t.Fatalf("the first record: prev %q, hash %q", records[0].PrevHash, records[0].Hash)
	}

	changed := append([]domain.AuditEvent(nil), records...)
	changed[2].Changes = map[string]domain.AuditChange{"name": {From: nil, To: "someone else"}}
	if b := verify(changed, head); b == nil || b.ID != records[2].ID || !strings.Contains(b.Reason, "changed") {
		t.Fatalf("a changed record: %v", b)
	}
	actor := append([]domain.AuditEvent(nil), records...)
	actor[1].Actor.IP = "198.51.100.9"
	if b := verify(actor, head); b == nil || b.ID != records[1].ID {
		t.Fatalf("a changed actor: %v", b)
	}
	rehashed := append([]domain.AuditEvent(nil), records...)
	rehashed[3].Target.ID = "key_other"
	rehashed[3].Hash = rehashed[3].ComputeHash() // recomputed, but the next record still names the old one
	if b := verify(rehashed, head); b == nil || b.ID != records[4].ID {
		t.Fatalf("a changed and rehashed record: %v", b)
	}
	missing := append(append([]domain.AuditEvent(nil), records[:2]...), records[3:]...)
	if b := verify(missing, head); b == nil || b.ID != records[3].ID || !strings.Contains(b.Reason, "missing") {
		t.Fatalf("a removed record: %v", b)
	}
	if b := verify(records[:4], head); b == nil || !strings.Contains(b.Reason, "removed from its end") {
		t.Fatalf("a chain cut short: %v", b)
	}

	// Retention: the kept tail verifies from the head's anchor, and only
	// from it.
	pruned := head
	pruned.PrunedSeq, pruned.PrunedHash = records[1].Seq, records[1].Hash
	if b := verify(records[2:], pruned); b != nil {
		t.Fatalf("the tail after pruning: %v", b)
	}
	if b := verify(records[3:], pruned); b == nil {
		t.Fatal("a tail missing its first record verified against the anchor")
	}
}

// A record's canonical form is the same after a trip through JSON (the
// database keeps changes as JSON): its hash still holds.
func TestAuditCanonicalSurvivesJSON(t *testing.T) {
	records, _ := chain(t, 1)
	e := records[0]
	raw, err := json.Marshal(e.Changes)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]domain.AuditChange
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	e.Changes = back
	if e.ComputeHash() != records[0].Hash {
		t.Fatalf("the hash changed after a JSON trip:\n%s", e.Canonical())
	}
}

// What a webhook's update records: active in its own record, the other
// fields in webhook.updated, header values never shown.
func TestAuditWebhookChanges(t *testing.T) {
	before := domain.Webhook{URL: "https://a.example/h", Events: []domain.EventType{domain.EventTaskCreated}, Active: true,
		Headers: map[string]string{"X-Token": "s3cret", "X-Keep": "same"}}
	after := before
	after.URL = "https://b.example/h"
	after.Active = false
	after.DisabledReason = domain.DisabledUser
	after.Headers = map[string]string{"X-Token": "n3w", "X-Keep": "same", "X-New": "v"}
	got := domain.ChangesWebhookUpdate(before, after)
	if len(got) != 2 || got[domain.AuditWebhookDisabled]["active"].To != false || got[domain.AuditWebhookUpdated]["url"].To != "https://b.example/h" {
		t.Fatalf("records: %+v", got)
	}
	raw, _ := json.Marshal(got)
	for _, secret := range []string{"s3cret", "n3w", `"v"`, "same"} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("a header value (%s) in the audit changes: %s", secret, raw)
		}
	}
	created, _ := json.Marshal(domain.ChangesWebhookCreated(domain.Webhook{URL: "https://a.example", Secret: "whsec_abc", Headers: map[string]string{"X-Token": "s3cret"}}))
	if strings.Contains(string(created), "whsec_abc") || strings.Contains(string(created), "s3cret") || !strings.Contains(string(created), domain.Redacted) {
		t.Fatalf("a created webhook's changes: %s", created)
	}
}
