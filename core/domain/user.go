package domain

import (
	"net/mail"
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

// Permission is what a call needs from the caller's role.
type Permission int

// The permissions of the roles (docs/api.md#tenancy-keys-and-roles).
const (
	// PermRead: any GET and any GraphQL query. Every role has it.
	PermRead Permission = iota
	// PermWrite: create and update projects; create, update and delete tasks.
	PermWrite
	// PermAdmin: every webhook call, reads included.
	PermAdmin
)

func (p Permission) minimum() Role {
	switch p {
	case PermWrite:
		return RoleMember
	case PermAdmin:
		return RoleAdmin
	}
	return RoleGuest
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
// Actor.WorkspaceID.
type Actor struct {
	UserID      string
	WorkspaceID string
	Role        Role
	KeyID       string
}

// Can reports whether the actor's role grants p.
func (a Actor) Can(p Permission) bool {
	return a.Role.rank() >= p.minimum().rank() && a.Role.rank() > 0
}

// Require returns permission_denied unless the actor's role grants p.
func (a Actor) Require(p Permission) error {
	if a.Can(p) {
		return nil
	}
	switch p {
	case PermAdmin:
		return Forbidden("This call requires the admin role; your key's user is %s.", a.Role)
	case PermWrite:
		return Forbidden("This call requires the member or admin role; your key's user is %s.", a.Role)
	}
	return Forbidden("Your key's user may not make this call.")
}
