package app

import (
	"context"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Projects is the project use cases.
type Projects struct{ d Deps }

// ProjectInput is what creating a project takes.
type ProjectInput struct {
	Name string
	Key  string
}

// Create makes a project in the caller's workspace. Members and admins only;
// validation_failed on a bad name or key, resource_already_exists when the
// key is taken.
func (s *Projects) Create(ctx context.Context, a domain.Actor, in ProjectInput) (domain.Project, error) {
	if err := a.Require(domain.PermWrite); err != nil {
		return domain.Project{}, err
	}
	p, err := domain.NewProject(s.d.IDs.NewID(domain.PrefixProject), a.WorkspaceID, in.Name, in.Key, s.d.Clock.Now())
	if err != nil {
		return domain.Project{}, err
	}
	err = s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.d.Projects.CreateProject(ctx, p); err != nil {
			return err
		}
		return s.d.record(ctx, a.WorkspaceID, domain.EventProjectCreated, p, nil)
	})
	return p, err
}

// Get returns a project of the caller's workspace, or resource_not_found.
func (s *Projects) Get(ctx context.Context, a domain.Actor, id string) (domain.Project, error) {
	if err := a.Require(domain.PermRead); err != nil {
		return domain.Project{}, err
	}
	if !domain.HasPrefix(id, domain.PrefixProject) {
		return domain.Project{}, domain.NotFound("project", id)
	}
	return s.d.Projects.FindProjectByID(ctx, a.WorkspaceID, id)
}

// GetMany returns the projects among ids (absent or foreign ids left out).
func (s *Projects) GetMany(ctx context.Context, a domain.Actor, ids []string) ([]domain.Project, error) {
	if err := a.Require(domain.PermRead); err != nil {
		return nil, err
	}
	return s.d.Projects.FindProjectsByIDs(ctx, a.WorkspaceID, ids)
}

// List pages through the caller's projects, oldest first.
func (s *Projects) List(ctx context.Context, a domain.Actor, req domain.PageRequest) (domain.Page[domain.Project], error) {
	if err := a.Require(domain.PermRead); err != nil {
		return domain.Page[domain.Project]{}, err
	}
	scope := ProjectListScope(a.WorkspaceID)
	after, n, err := pageQuery(req, scope)
	if err != nil {
		return domain.Page[domain.Project]{}, err
	}
	ps, err := s.d.Projects.FindProjects(ctx, ports.ProjectFilter{WorkspaceID: a.WorkspaceID, After: after, Limit: n})
	if err != nil {
		return domain.Page[domain.Project]{}, err
	}
	return domain.NewPage(ps, req.Limit, scope, domain.Project.Position), nil
}

// Update applies a merge patch to a project. A patch that changes nothing
// returns the project as it is and writes nothing.
func (s *Projects) Update(ctx context.Context, a domain.Actor, id string, patch domain.ProjectPatch) (domain.Project, error) {
	if err := a.Require(domain.PermWrite); err != nil {
		return domain.Project{}, err
	}
	if !domain.HasPrefix(id, domain.PrefixProject) {
		return domain.Project{}, domain.NotFound("project", id)
	}
	var out domain.Project
	err := s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		p, err := s.d.Projects.FindProjectByIDForUpdate(ctx, a.WorkspaceID, id)
		if err != nil {
			return err
		}
		updated, changes, err := p.Apply(patch, s.d.Clock.Now())
		if err != nil {
			return err
		}
		out = updated
		if len(changes) == 0 {
			return nil
		}
		if err := s.d.Projects.UpdateProject(ctx, updated); err != nil {
			return err
		}
		return s.d.record(ctx, a.WorkspaceID, domain.EventProjectUpdated, updated, changes)
	})
	return out, err
}
