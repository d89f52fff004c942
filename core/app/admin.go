package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Admin is the operator's use cases, run from the command line with direct
// database access: no actor, no roles.
type Admin struct{ d AdminDeps }

// AdminDeps are the ports Admin uses. Auth is this process's key resolver,
// whose cache a revocation clears at once.
type AdminDeps struct {
	Tx         ports.Transactor
	Clock      ports.Clock
	IDs        ports.IDGenerator
	Workspaces ports.WorkspaceStore
	Users      ports.UserStore
	Keys       ports.APIKeyStore
	Projects   ports.ProjectStore
	Auth       *Auth
	Audit      auditLog
}

// NewAdmin makes the operator's use cases.
func NewAdmin(d AdminDeps) *Admin {
	mustHave(map[string]any{
		"Tx": d.Tx, "Clock": d.Clock, "IDs": d.IDs, "Workspaces": d.Workspaces, "Users": d.Users, "Keys": d.Keys,
		"Projects": d.Projects,
	})
	if d.Auth == nil {
		panic("app: missing Auth")
	}
	return &Admin{d: d}
}

// CreateWorkspace makes a workspace.
func (s *Admin) CreateWorkspace(ctx context.Context, name string) (domain.Workspace, error) {
	return s.createWorkspace(ctx, name, operatorActor(ctx))
}

func (s *Admin) createWorkspace(ctx context.Context, name string, by domain.AuditActor) (domain.Workspace, error) {
	w, err := domain.NewWorkspace(s.d.IDs.NewID(domain.PrefixWorkspace), name, s.d.Clock.Now())
	if err != nil {
		return domain.Workspace{}, err
	}
	return w, s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.d.Workspaces.CreateWorkspace(ctx, w); err != nil {
			return err
		}
		return s.d.Audit.record(ctx, w.ID, domain.AuditWorkspaceCreated, by,
			domain.AuditTarget{Type: domain.AuditTargetWorkspace, ID: w.ID}, domain.ChangesWorkspaceCreated(w))
	})
}

// CreateUser adds a user to a workspace; resource_not_found for an unknown
// workspace (param workspace), resource_already_exists for a taken email.
func (s *Admin) CreateUser(ctx context.Context, workspaceID, email, name string, role domain.Role) (domain.User, error) {
	return s.createUser(ctx, workspaceID, email, name, role, operatorActor(ctx))
}

func (s *Admin) createUser(ctx context.Context, workspaceID, email, name string, role domain.Role, by domain.AuditActor) (domain.User, error) {
	if _, err := s.d.Workspaces.FindWorkspaceByID(ctx, workspaceID); err != nil {
		return domain.User{}, err
	}
	u, err := domain.NewUser(s.d.IDs.NewID(domain.PrefixUser), workspaceID, email, name, role, s.d.Clock.Now())
	if err != nil {
		return domain.User{}, err
	}
	return u, s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.d.Users.CreateUser(ctx, u); err != nil {
			return err
		}
		return s.d.Audit.record(ctx, workspaceID, domain.AuditUserCreated, by,
			domain.AuditTarget{Type: domain.AuditTargetUser, ID: u.ID}, domain.ChangesUserCreated(u))
	})
}

// CreateKey makes an API key for a user, as the API would (the same rules
// and the same cap of keys per user), and returns its secret, which is never
// shown again.
func (s *Admin) CreateKey(ctx context.Context, userID string, in domain.APIKeyFields) (domain.APIKey, string, error) {
	return s.createKey(ctx, userID, in, operatorActor(ctx))
}

func (s *Admin) createKey(ctx context.Context, userID string, in domain.APIKeyFields, by domain.AuditActor) (domain.APIKey, string, error) {
	u, err := s.findUser(ctx, userID)
	if err != nil {
		return domain.APIKey{}, "", err
	}
	return createKey(ctx, s.keyDeps(), u, in, by)
}

// keyDeps are the ports the key use cases shared with the API need.
func (s *Admin) keyDeps() keyDeps {
	return keyDeps{Tx: s.d.Tx, Clock: s.d.Clock, IDs: s.d.IDs, Keys: s.d.Keys, Users: s.d.Users, Projects: s.d.Projects, Audit: s.d.Audit}
}

// ListWorkspaces lists every workspace, oldest first.
func (s *Admin) ListWorkspaces(ctx context.Context) ([]domain.Workspace, error) {
	return s.d.Workspaces.ListWorkspaces(ctx)
}

// ListUsers lists every user of a workspace, oldest first;
// resource_not_found for an unknown workspace.
func (s *Admin) ListUsers(ctx context.Context, workspaceID string) ([]domain.User, error) {
	if _, err := s.d.Workspaces.FindWorkspaceByID(ctx, workspaceID); err != nil {
		return nil, err
	}
	var all []domain.User
	var after *domain.Position
	for {
		users, err := s.d.Users.FindUsers(ctx, ports.UserFilter{WorkspaceID: workspaceID, After: after, Limit: 500})
		if err != nil {
			return nil, err
		}
		all = append(all, users...)
		if len(users) < 500 {
			return all, nil
		}
		last := users[len(users)-1]
		after = &domain.Position{At: last.CreatedAt, ID: last.ID}
	}
}

// UserByEmail finds the user with that email (any case). workspaceID may
// be empty when only one workspace has such a user; otherwise the error
// names the workspaces to choose from (param workspace).
func (s *Admin) UserByEmail(ctx context.Context, email, workspaceID string) (domain.User, error) {
	users, err := s.d.Users.FindUsersByEmailAnyWorkspace(ctx, email)
	if err != nil {
		return domain.User{}, err
	}
	var found []domain.User
	var spaces []string
	for _, u := range users {
		if workspaceID == "" || u.WorkspaceID == workspaceID {
			found = append(found, u)
			spaces = append(spaces, u.WorkspaceID)
		}
	}
	switch len(found) {
	case 0:
		return domain.User{}, &domain.Error{Code: domain.CodeNotFound, Param: "email",
			Message: fmt.Sprintf("No user has the email '%s'%s.", email, inWorkspace(workspaceID))}
	case 1:
		return found[0], nil
	}
	return domain.User{}, domain.Invalid("workspace", "Users with the email '%s' exist in several workspaces (%s): name one with --workspace.",
		email, strings.Join(spaces, ", "))
}

func inWorkspace(id string) string {
	if id == "" {
		return ""
	}
	return " in workspace " + id
}

// ListKeys lists a user's keys (hashes only; secrets are never kept).
func (s *Admin) ListKeys(ctx context.Context, userID string) ([]domain.APIKey, error) {
	if _, err := s.findUser(ctx, userID); err != nil {
		return nil, err
	}
	return s.d.Keys.FindAPIKeysByUser(ctx, userID)
}

// RevokeKey revokes a key. It stops working at once in this process and
// within the key cache TTL in every other.
func (s *Admin) RevokeKey(ctx context.Context, id string) (domain.APIKey, error) {
	k, err := revokeKey(ctx, s.keyDeps(), id, operatorActor(ctx))
	if err != nil {
		return domain.APIKey{}, err
	}
	s.d.Auth.forget(k.SecretHash)
	return k, nil
}

// SetRole changes a user's role. Every key of the user may do at once, in
// this process, what the new role and the key's scopes allow together; in
// the others within the key cache TTL.
func (s *Admin) SetRole(ctx context.Context, userID string, role domain.Role) (domain.User, error) {
	if _, err := domain.ParseRole("role", string(role)); err != nil {
		return domain.User{}, err
	}
	u, err := s.findUser(ctx, userID)
	if err != nil {
		return domain.User{}, err
	}
	if u.Role == role {
		return u, nil
	}
	err = s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.d.Users.SetUserRole(ctx, u.WorkspaceID, u.ID, role); err != nil {
			return err
		}
		return s.d.Audit.record(ctx, u.WorkspaceID, domain.AuditUserRoleChanged, operatorActor(ctx),
			domain.AuditTarget{Type: domain.AuditTargetUser, ID: u.ID}, domain.ChangesRoleChanged(u.Role, role))
	})
	if err != nil {
		return domain.User{}, err
	}
	s.d.Auth.forgetUser(u.ID)
	u.Role = role
	return u, nil
}

// Bootstrap prepares an empty database for a first start: workspace
// "Default", an admin with the given email, and one API key whose secret is
// returned. When any workspace exists it does nothing and returns created
// false, so the secret is shown at most once in the database's life.
func (s *Admin) Bootstrap(ctx context.Context, email string) (created bool, key domain.APIKey, secret string, err error) {
	err = s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.d.Workspaces.LockWorkspaces(ctx); err != nil {
			return err
		}
		n, err := s.d.Workspaces.CountWorkspaces(ctx)
		if err != nil || n > 0 {
			return err
		}
		w, err := s.createWorkspace(ctx, "Default", systemActor)
		if err != nil {
			return err
		}
		u, err := s.createUser(ctx, w.ID, email, "Admin", domain.RoleAdmin, systemActor)
		if err != nil {
			return err
		}
		key, secret, err = s.createKey(ctx, u.ID, domain.APIKeyFields{Name: domain.Set("bootstrap")}, systemActor)
		created = err == nil
		return err
	})
	return created, key, secret, err
}

// findUser finds a user in any workspace: the operator is not scoped.
func (s *Admin) findUser(ctx context.Context, id string) (domain.User, error) {
	if !domain.IsID(id, domain.PrefixUser) {
		return domain.User{}, domain.NotFound("user", id)
	}
	return s.d.Users.FindUserByIDAnyWorkspace(ctx, id)
}
