package domain

import (
	"maps"
	"slices"
	"time"
)

// What an audit record says changed, per kind of target: plain JSON
// values (strings, lists of strings, booleans, null), so that a record's
// canonical form is the same after a trip through the database. A secret
// or a header's value is never one of them: Redacted stands in for it.

// Audit target types.
const (
	AuditTargetAPIKey    = "api_key"
	AuditTargetUser      = "user"
	AuditTargetWebhook   = "webhook"
	AuditTargetProject   = "project"
	AuditTargetWorkspace = "workspace"
)

func created(to any) AuditChange { return AuditChange{From: nil, To: to} }

func auditTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return FormatTime(*t)
}

func auditStrings[S ~string](vs []S) any {
	if vs == nil {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// redactedHeaders shows a webhook's header names, each value Redacted.
func redactedHeaders(h map[string]string) any {
	out := make(map[string]string, len(h))
	for _, name := range slices.Sorted(maps.Keys(h)) {
		out[name] = Redacted
	}
	return out
}

// ChangesKeyCreated is what a key's creation records: everything but its
// secret, of which only the hash is stored.
func ChangesKeyCreated(k APIKey) map[string]AuditChange {
	return map[string]AuditChange{
		"name": created(k.Name), "user_id": created(k.UserID), "scopes": created(auditStrings(k.Scopes)),
		"project_ids": created(auditStrings(k.ProjectIDs)), "expires_at": created(auditTime(k.ExpiresAt)),
		"prefix": created(k.Prefix),
	}
}

// ChangesKeyRenamed is a key's new name.
func ChangesKeyRenamed(before, after APIKey) map[string]AuditChange {
	return map[string]AuditChange{"name": {From: before.Name, To: after.Name}}
}

// ChangesKeyRevoked is a key's revocation.
func ChangesKeyRevoked(k APIKey) map[string]AuditChange {
	return map[string]AuditChange{"revoked_at": created(auditTime(k.RevokedAt))}
}

// ChangesUserCreated is a user's creation.
func ChangesUserCreated(u User) map[string]AuditChange {
	return map[string]AuditChange{"email": created(u.Email), "name": created(u.Name), "role": created(string(u.Role))}
}

// ChangesRoleChanged is a user's new role.
func ChangesRoleChanged(from, to Role) map[string]AuditChange {
	return map[string]AuditChange{"role": {From: string(from), To: string(to)}}
}

// ChangesProjectCreated is a project's creation.
func ChangesProjectCreated(p Project) map[string]AuditChange {
	return map[string]AuditChange{"name": created(p.Name), "key": created(p.Key)}
}

// ChangesProjectRenamed is a project's new name.
func ChangesProjectRenamed(before, after Project) map[string]AuditChange {
	return map[string]AuditChange{"name": {From: before.Name, To: after.Name}}
}

// ChangesWorkspaceCreated is a workspace's creation.
func ChangesWorkspaceCreated(w Workspace) map[string]AuditChange {
	return map[string]AuditChange{"name": created(w.Name)}
}

// ChangesWebhookCreated is a webhook's registration: its URL, events, state
// and header names, its secret Redacted.
func ChangesWebhookCreated(w Webhook) map[string]AuditChange {
	return map[string]AuditChange{
		"url": created(w.URL), "events": created(auditStrings(w.Events)), "active": created(w.Active),
		"headers": created(redactedHeaders(w.Headers)), "secret": created(Redacted),
	}
}

// ChangesWebhookDeleted is what a webhook was when it was deleted.
func ChangesWebhookDeleted(w Webhook) map[string]AuditChange {
	return map[string]AuditChange{
		"url": {From: w.URL, To: nil}, "events": {From: auditStrings(w.Events), To: nil}, "active": {From: w.Active, To: nil},
	}
}

// ChangesWebhookRotated is a secret's rotation: both secrets Redacted, and
// until when the previous one still signs.
func ChangesWebhookRotated(before, after Webhook) map[string]AuditChange {
	return map[string]AuditChange{
		"secret":                     {From: Redacted, To: Redacted},
		"previous_secret_expires_at": {From: auditTime(before.PreviousSecretExpiresAt), To: auditTime(after.PreviousSecretExpiresAt)},
	}
}

// ChangesWebhookUpdate splits a webhook's change into the records it makes:
// webhook.disabled or webhook.enabled for a change of active (with
// disabled_reason), webhook.updated for its other fields (url, events,
// headers: names shown, values Redacted, a changed value showing as a
// change of the header). Fields that did not change are left out; an
// update that changed nothing recordable returns nothing.
func ChangesWebhookUpdate(before, after Webhook) map[AuditAction]map[string]AuditChange {
	out := map[AuditAction]map[string]AuditChange{}
	if before.Active != after.Active {
		action := AuditWebhookDisabled
		if after.Active {
			action = AuditWebhookEnabled
		}
		out[action] = map[string]AuditChange{
			"active":          {From: before.Active, To: after.Active},
			"disabled_reason": {From: nullIfEmpty(string(before.DisabledReason)), To: nullIfEmpty(string(after.DisabledReason))},
		}
	}
	changes := map[string]AuditChange{}
	if before.URL != after.URL {
		changes["url"] = AuditChange{From: before.URL, To: after.URL}
	}
	if !slices.Equal(before.Events, after.Events) {
		changes["events"] = AuditChange{From: auditStrings(before.Events), To: auditStrings(after.Events)}
	}
	if !maps.Equal(before.Headers, after.Headers) {
		from, to := redactedHeaders(before.Headers).(map[string]string), redactedHeaders(after.Headers).(map[string]string)
		for name, v := range after.Headers {
			if old, ok := before.Headers[name]; ok && old != v {
				// Same name, new value: show it as changed without the values.
				to[name] = Redacted + " (changed)"
			}
		}
		changes["headers"] = AuditChange{From: from, To: to}
	}
	if len(changes) > 0 {
		out[AuditWebhookUpdated] = changes
	}
	return out
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
