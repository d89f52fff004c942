package app

import (
	"context"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// TaskListRequest asks for one page of one project's task list.
type TaskListRequest struct {
	ProjectID string
	Filter    TaskListFilter
	Page      domain.PageRequest
}

// ListMany is List for several task lists at once, with the same rules:
// validation, tenancy, cursors and pages. The i-th page or error answers
// reqs[i]. All the pages cost one statement, plus one when some page comes
// back empty (to tell an empty project from an absent one), so that
// GraphQL's Project.tasks under a list of projects costs the same whatever
// the number of projects. resource_not_found for an absent or foreign
// project; validation_failed (limit, cursor) for a bad page request.
func (s *Tasks) ListMany(ctx context.Context, a domain.Actor, reqs []TaskListRequest) ([]domain.Page[domain.Task], []error) {
	pages := make([]domain.Page[domain.Task], len(reqs))
	errs := make([]error, len(reqs))
	fail := func(idx []int, err error) ([]domain.Page[domain.Task], []error) {
		for _, i := range idx {
			errs[i] = err
		}
		return pages, errs
	}
	all := make([]int, len(reqs))
	for i := range all {
		all[i] = i
	}
	if err := a.Require(domain.ScopeTasksRead); err != nil {
		return fail(all, err)
	}

	keysets := make([]domain.Keyset, len(reqs))
	var filters []ports.TaskFilter
	var asked []int // asked[j] is the request filters[j] answers
	for i, r := range reqs {
		q, k, err := taskListQuery(a, r)
		if err != nil {
			errs[i] = err
			continue
		}
		keysets[i] = k
		filters = append(filters, q)
		asked = append(asked, i)
	}
	if len(filters) == 0 {
		return pages, errs
	}
	found, err := s.d.Tasks.FindTaskPages(ctx, filters)
	if err != nil {
		return fail(asked, err)
	}

	// As in List, any row proves its project visible; only the projects of
	// empty pages need asking whether they exist, all in one statement.
	var empty []string
	for j, i := range asked {
		if len(found[j]) == 0 {
			empty = append(empty, reqs[i].ProjectID)
		}
	}
	visible := map[string]bool{}
	if len(empty) > 0 {
		ps, err := s.d.Projects.FindProjectsByIDs(ctx, a.WorkspaceID, empty)
		if err != nil {
			return fail(asked, err)
		}
		for _, p := range ps {
			visible[p.ID] = true
		}
	}
	for j, i := range asked {
		if len(found[j]) == 0 && !visible[reqs[i].ProjectID] {
			errs[i] = domain.NotFound("project", reqs[i].ProjectID)
			continue
		}
		pages[i] = domain.NewPage(found[j], keysets[i], domain.Task.Position)
	}
	return pages, errs
}
