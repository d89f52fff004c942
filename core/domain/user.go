package domain

import (
	"net/mail"
	"slices"
	"strings"
	"time"
)

// Role is a user's role in its workspace (docs/api.md#tenancy-keys-and-roles).
type Role string

// The roles, weakest first.
const (
	RoleGuest  Role = "guest"
	RoleMember Role = "member"
	RoleAdmin  Role = "admin"
)

// ParseRole validates a role name.
func ParseRole(param, s string) (Role, error) {
	switch r := Role(s); r {
	case RoleGuest, RoleMember, RoleAdmin:
		return r, nil
	}
	return "", Invalid(param, "Must be one of admin, member, guest.")
}

// AtLeast reports whether r may do all that o may: admin, then member,
// then guest.
func (r Role) AtLeast(o Role) bool { return r.rank() >= o.rank() }

func (r Role) rank() int {
	switch r {
	case RoleAdmin:
		return 3
	case RoleMember:
		return 2
	case RoleGuest:
		return 1
	}
	return 0
}

// User is a member of a workspace.
type User struct {
	ID          string
	WorkspaceID string
	Email       string
	Name        string
	Role        Role
	CreatedAt   time.Time
}

// NewUser validates a user about to be created.
func NewUser(id, workspaceID, email, name string, role Role, now time.Time) (User, error) {
	email = strings.TrimSpace(email)
	if addr, err := mail.ParseAddress(email); err != nil || addr.Address != email || len(email) > 254 {
		return User{}, Invalid("email", "Must be a plain email address.")
	}
	name, err := cleanName("name", name, 200)
	if err != nil {
		return User{}, err
	}
	if _, err := ParseRole("role", string(role)); err != nil {
		return User{}, err
	}
	return User{ID: id, WorkspaceID: workspaceID, Email: email, Name: name, Role: role, CreatedAt: Timestamp(now)}, nil
}

// Actor is the authenticated caller: a user acting through one API key inside
// its own workspace. Every core service takes one and scopes all it does to
// Actor.WorkspaceID, to the key's scopes intersected with the user's role,
// and, for a key restricted to projects, to those projects.
type Actor struct {
	UserID      string
	WorkspaceID string
	Role        Role
	KeyID       string
	// Scopes are the key's; nil is every scope (the operator's own calls,
	// which act without a key).
	Scopes []Scope
	// ProjectIDs are the projects a restricted key sees; nil is all.
	ProjectIDs []string
	// KeyExpiresAt is when the key expires; nil when it does not.
	KeyExpiresAt *time.Time
}

// Can reports whether the actor may make the calls of scope s: its role is
// at least the scope's minimum role, and its key holds s.
func (a Actor) Can(s Scope) bool { return a.Require(s) == nil }

// Require returns permission_denied when the actor's role may not make the
// calls of scope s, and insufficient_scope, naming s, when its key does not
// hold it.
func (a Actor) Require(s Scope) error {
	if a.Role.rank() == 0 || a.Role.rank() < s.minimumRole().rank() {
		switch s.minimumRole() {
		case RoleAdmin:
			return Forbidden("This call requires the admin role; your key's user is %s.", a.Role)
		case RoleMember:
			return Forbidden("This call requires the member or admin role; your key's user is %s.", a.Role)
		}
		return Forbidden("Your key's user may not make this call.")
	}
	if a.Scopes != nil && !GrantsScope(a.Scopes, s) {
		return insufficientScope(s, a.Scopes)
	}
	return nil
}

// Restricted reports whether the actor's key sees only some projects.
func (a Actor) Restricted() bool { return a.ProjectIDs != nil }

// SeesProject reports whether the actor's key sees the project.
func (a Actor) SeesProject(id string) bool {
	return a.ProjectIDs == nil || slices.Contains(a.ProjectIDs, id)
}

// SeesWorkspaceEvents reports whether the actor sees the events that
// concern the workspace rather than a project (webhook.disabled): they show
// a webhook, so they need webhooks:read and a key not restricted to
// projects.
func (a Actor) SeesWorkspaceEvents() bool { return !a.Restricted() && a.Can(ScopeWebhooksRead) }

// SeesEvent reports whether the actor sees an event of its workspace: a
// project's, when it sees the project; the workspace's, when
// SeesWorkspaceEvents.
func (a Actor) SeesEvent(projectID string) bool {
	if projectID == "" {
		return a.SeesWorkspaceEvents()
	}
	return a.SeesProject(projectID)
}

// RequireUnrestricted refuses, with insufficient_scope, a call that a key
// restricted to projects may not make (what cannot be confined to its
// projects: creating projects, webhooks).
func (a Actor) RequireUnrestricted(what string) error {
	if a.Restricted() {
		return Errorf(CodeInsufficientScope, "A key restricted to projects may not %s; use a key without project_ids.", what)
	}
	return nil
}
