package app

import (
	"context"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Users reads the members of the caller's workspace.
type Users struct{ d UsersDeps }

// UsersDeps are the ports Users uses.
type UsersDeps struct {
	Users ports.UserStore
}

// NewUsers makes the member reads.
func NewUsers(d UsersDeps) *Users {
	mustHave(map[string]any{"Users": d.Users})
	return &Users{d: d}
}

// Me returns the user that owns the caller's key.
func (s *Users) Me(ctx context.Context, a domain.Actor) (domain.User, error) {
	if err := a.Require(domain.ScopeUsersRead); err != nil {
		return domain.User{}, err
	}
	return s.d.Users.FindUserByID(ctx, a.WorkspaceID, a.UserID)
}

// Get returns one member of the caller's workspace, or resource_not_found.
func (s *Users) Get(ctx context.Context, a domain.Actor, id string) (domain.User, error) {
	if err := a.Require(domain.ScopeUsersRead); err != nil {
		return domain.User{}, err
	}
	if !domain.IsID(id, domain.PrefixUser) {
		return domain.User{}, domain.NotFound("user", id)
	}
	return s.d.Users.FindUserByID(ctx, a.WorkspaceID, id)
}

// GetMany returns the members among ids (absent or foreign ids left out).
func (s *Users) GetMany(ctx context.Context, a domain.Actor, ids []string) ([]domain.User, error) {
	if err := a.Require(domain.ScopeUsersRead); err != nil {
		return nil, err
	}
	return s.d.Users.FindUsersByIDs(ctx, a.WorkspaceID, domain.WellFormedIDs(ids, domain.PrefixUser))
}

// List pages through the members of the caller's workspace.
func (s *Users) List(ctx context.Context, a domain.Actor, req domain.PageRequest) (domain.Page[domain.User], error) {
	if err := a.Require(domain.ScopeUsersRead); err != nil {
		return domain.Page[domain.User]{}, err
	}
	k, err := req.Keyset(userListScope(a.WorkspaceID))
	if err != nil {
		return domain.Page[domain.User]{}, err
	}
	users, err := s.d.Users.FindUsers(ctx, ports.UserFilter{WorkspaceID: a.WorkspaceID, After: k.After, Limit: k.Rows()})
	if err != nil {
		return domain.Page[domain.User]{}, err
	}
	return domain.NewPage(users, k, domain.User.Position), nil
}
