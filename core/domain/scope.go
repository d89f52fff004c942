package domain

import (
	"slices"
	"strings"
)

// Scope is what an API key may do, beside its user's role
// (docs/keys.md): a resource and read or write, or "*" for everything its
// user may do. A resource's write scope includes its read scope.
type Scope string

// The scopes.
const (
	ScopeAll           Scope = "*"
	ScopeUsersRead     Scope = "users:read"
	ScopeProjectsRead  Scope = "projects:read"
	ScopeProjectsWrite Scope = "projects:write"
	ScopeTasksRead     Scope = "tasks:read"
	ScopeTasksWrite    Scope = "tasks:write"
	ScopeWebhooksRead  Scope = "webhooks:read"
	ScopeWebhooksWrite Scope = "webhooks:write"
	ScopeEventsRead    Scope = "events:read"
	ScopeAPIKeysRead   Scope = "api_keys:read" //nolint:gosec // a scope's name, not a credential
	ScopeAPIKeysWrite  Scope = "api_keys:write"
	ScopeAuditRead     Scope = "audit:read"
)

// Scopes lists every scope but "*", in the order docs/keys.md gives them.
var Scopes = []Scope{
	ScopeUsersRead, ScopeProjectsRead, ScopeProjectsWrite, ScopeTasksRead, ScopeTasksWrite,
	ScopeWebhooksRead, ScopeWebhooksWrite, ScopeEventsRead, ScopeAPIKeysRead, ScopeAPIKeysWrite, ScopeAuditRead,
}

// CodeInsufficientScope: the call needs a scope the key does not have.
const CodeInsufficientScope Code = "insufficient_scope"

// minimumRole is the least role a scope's calls need: a key's scopes are
// intersected with its user's role at every request.
func (s Scope) minimumRole() Role {
	switch s {
	case ScopeProjectsWrite, ScopeTasksWrite:
		return RoleMember
	case ScopeWebhooksRead, ScopeWebhooksWrite, ScopeAuditRead:
		return RoleAdmin
	}
	return RoleGuest
}

// ParseScopes validates a key's scopes (param scopes): at least one, each
// "*" or a known scope; duplicates collapse.
func ParseScopes(names []string) ([]Scope, error) {
	if len(names) == 0 {
		return nil, Invalid("scopes", "Must hold at least one scope.")
	}
	var out []Scope
	for _, n := range names {
		s := Scope(n)
		if s != ScopeAll && !slices.Contains(Scopes, s) {
			return nil, Invalid("scopes", "Must hold only *, %s.", joinScopes(Scopes))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// GrantsScope reports whether held grants s: "*", s itself, or the write
// scope of s's resource for a read scope.
func GrantsScope(held []Scope, s Scope) bool {
	for _, h := range held {
		if h == ScopeAll || h == s {
			return true
		}
		if res, ok := strings.CutSuffix(string(s), ":read"); ok && h == Scope(res+":write") {
			return true
		}
	}
	return false
}

// CoversScopes reports whether held grants every scope of wanted (a key
// never creates a key with more than its own).
func CoversScopes(held, wanted []Scope) bool {
	for _, w := range wanted {
		if w == ScopeAll {
			if !slices.Contains(held, ScopeAll) {
				return false
			}
			continue
		}
		if !GrantsScope(held, w) {
			return false
		}
	}
	return true
}

func joinScopes(ss []Scope) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// insufficientScope is the refusal of a call that needs s.
func insufficientScope(s Scope, held []Scope) *Error {
	return Errorf(CodeInsufficientScope, "This call needs the scope %s; this API key has %s.", s, joinScopes(held))
}
