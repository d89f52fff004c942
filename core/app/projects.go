package app

import (
	"context"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Projects is the project use cases.
type Projects struct{ d ProjectsDeps }

// ProjectsDeps are the ports Projects uses. Events records project.created
// and project.updated in the transaction of the change.
type ProjectsDeps struct {
	Tx       ports.Transactor
	Clock    ports.Clock
	IDs      ports.IDGenerator
	Projects ports.ProjectStore
	Events   ports.EventRecorder
	Answers  ports.AnswerStore
	Audit    auditLog
}

// NewProjects makes the project use cases.
func NewProjects(d ProjectsDeps) *Projects {
	mustHave(map[string]any{"Tx": d.Tx, "Clock": d.Clock, "IDs": d.IDs, "Projects": d.Projects, "Events": d.Events, "Answers": d.Answers})
	return &Projects{d: d}
}

func (s *Projects) record(ctx context.Context, a domain.Actor, typ domain.EventType, p domain.Project, changes domain.Changes) error {
	return s.d.Events.RecordEvent(ctx, newEvent(s.d.IDs, s.d.Clock, a.WorkspaceID, typ, p, changes))
}

// Create makes a project in the caller's workspace. Members and admins only,
// projects:write, and no key restricted to projects; validation_failed on a
// bad name or key, resource_already_exists when the key is taken.
func (s *Projects) Create(ctx context.Context, a domain.Actor, in domain.ProjectFields) (domain.Project, error) {
	if err := a.Require(domain.ScopeProjectsWrite); err != nil {
		return domain.Project{}, err
	}
	if err := a.RequireUnrestricted("create projects"); err != nil {
		return domain.Project{}, err
	}
	p, err := domain.NewProject(s.d.IDs.NewID(domain.PrefixProject), a.WorkspaceID, in, s.d.Clock.Now())
	if err != nil {
		return domain.Project{}, err
	}
	err = s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := claimKey(ctx, s.d.Answers); err != nil {
			return err
		}
		if err := s.d.Projects.CreateProject(ctx, p); err != nil {
			return err
		}
		if err := s.record(ctx, a, domain.EventProjectCreated, p, nil); err != nil {
			return err
		}
		if err := commitAnswer(ctx, s.d.Answers, p); err != nil {
			return err
		}
		return s.d.Audit.record(ctx, a.WorkspaceID, domain.AuditProjectCreated, auditActor(ctx, a),
			domain.AuditTarget{Type: domain.AuditTargetProject, ID: p.ID}, domain.ChangesProjectCreated(p))
	})
	return p, err
}

// Get returns a project of the caller's workspace, or resource_not_found
// (also for a project the caller's key is not restricted to).
func (s *Projects) Get(ctx context.Context, a domain.Actor, id string) (domain.Project, error) {
	if err := a.Require(domain.ScopeProjectsRead); err != nil {
		return domain.Project{}, err
	}
	if !domain.IsID(id, domain.PrefixProject) || !a.SeesProject(id) {
		return domain.Project{}, domain.NotFound("project", id)
	}
	return s.d.Projects.FindProjectByID(ctx, a.WorkspaceID, id)
}

// GetMany returns the projects among ids (absent or foreign ids left out).
func (s *Projects) GetMany(ctx context.Context, a domain.Actor, ids []string) ([]domain.Project, error) {
	if err := a.Require(domain.ScopeProjectsRead); err != nil {
		return nil, err
	}
	return s.d.Projects.FindProjectsByIDs(ctx, a.WorkspaceID, visibleProjects(a, domain.WellFormedIDs(ids, domain.PrefixProject)))
}

// visibleProjects are the ids among ids the actor's key sees.
func visibleProjects(a domain.Actor, ids []string) []string {
	if !a.Restricted() {
		return ids
	}
	out := ids[:0:0]
	for _, id := range ids {
		if a.SeesProject(id) {
			out = append(out, id)
		}
	}
	return out
}

// List pages through the caller's projects, oldest first.
func (s *Projects) List(ctx context.Context, a domain.Actor, req domain.PageRequest) (domain.Page[domain.Project], error) {
	if err := a.Require(domain.ScopeProjectsRead); err != nil {
		return domain.Page[domain.Project]{}, err
	}
	k, err := req.Keyset(projectListScope(a.WorkspaceID))
	if err != nil {
		return domain.Page[domain.Project]{}, err
	}
	ps, err := s.d.Projects.FindProjects(ctx, ports.ProjectFilter{WorkspaceID: a.WorkspaceID, IDs: a.ProjectIDs, After: k.After, Limit: k.Rows()})
	if err != nil {
		return domain.Page[domain.Project]{}, err
	}
	return domain.NewPage(ps, k, domain.Project.Position), nil
}

// Update applies a merge patch to a project. A patch that changes nothing
// returns the project as it is and writes nothing.
func (s *Projects) Update(ctx context.Context, a domain.Actor, id string, patch domain.ProjectFields) (domain.Project, error) {
	if err := a.Require(domain.ScopeProjectsWrite); err != nil {
		return domain.Project{}, err
	}
	if !domain.IsID(id, domain.PrefixProject) || !a.SeesProject(id) {
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
		if err := s.record(ctx, a, domain.EventProjectUpdated, updated, changes); err != nil {
			return err
		}
		if p.Name == updated.Name {
			return nil
		}
		return s.d.Audit.record(ctx, a.WorkspaceID, domain.AuditProjectRenamed, auditActor(ctx, a),
			domain.AuditTarget{Type: domain.AuditTargetProject, ID: p.ID}, domain.ChangesProjectRenamed(p, updated))
	})
	return out, err
}
