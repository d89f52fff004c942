package app

import (
	"context"
	"slices"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// TaskListRequest asks for one page of a task list: one project's when
// ProjectID is set, else the tasks of every project the key sees.
type TaskListRequest struct {
	ProjectID string
	Query     domain.TaskQuery
	Page      domain.PageRequest
}

// List pages through a task list, filtered and ordered as r asks
// (docs/finding-tasks.md). validation_failed naming the parameter for a bad
// filter, order, limit or cursor; resource_not_found for an absent or
// foreign project of a project's list.
func (s *Tasks) List(ctx context.Context, a domain.Actor, r TaskListRequest) (domain.Page[domain.Task], error) {
	var none domain.Page[domain.Task]
	if err := a.Require(domain.ScopeTasksRead); err != nil {
		return none, err
	}
	q, k, err := taskListQuery(a, r)
	if err != nil {
		return none, err
	}
	var tasks []domain.Task
	if q.ProjectIDs == nil || len(q.ProjectIDs) > 0 {
		if tasks, err = s.d.Tasks.FindTasks(ctx, q); err != nil {
			return none, err
		}
	}
	// A project's tasks are scoped by workspace and project, so any row
	// proves the project is visible; only an empty page needs to ask
	// whether it exists. A list request therefore costs one statement in
	// the common case.
	if len(tasks) == 0 && r.ProjectID != "" {
		if _, err := s.d.Projects.FindProjectByID(ctx, a.WorkspaceID, r.ProjectID); err != nil {
			return none, err
		}
	}
	return domain.NewPage(tasks, k, r.Query.Order.Position), nil
}

// Count counts the tasks q selects among every project the key sees, by
// group. validation_failed naming the parameter for a bad grouping or
// filter.
func (s *Tasks) Count(ctx context.Context, a domain.Actor, q domain.TaskQuery, by domain.TaskCountGroup) (domain.TaskCounts, error) {
	if err := a.Require(domain.ScopeTasksRead); err != nil {
		return domain.TaskCounts{}, err
	}
	if err := by.Validate(); err != nil {
		return domain.TaskCounts{}, err
	}
	f, _, err := taskFilter(a, "", q)
	if err != nil {
		return domain.TaskCounts{}, err
	}
	out := domain.TaskCounts{GroupBy: by, Groups: []domain.TaskCount{}}
	if f.ProjectIDs != nil && len(f.ProjectIDs) == 0 {
		return out, nil
	}
	groups, err := s.d.Tasks.CountTasks(ctx, f, by)
	if err != nil {
		return domain.TaskCounts{}, err
	}
	out.Groups = append(out.Groups, groups...)
	for _, g := range groups {
		out.Total += g.Count
	}
	return out, nil
}

// taskListQuery checks one task list request and makes its store query and
// keyset: the rules List and ListMany share, in one order. A bad page size
// or filter is the request's fault whatever the project; an ill-formed or
// unseen project is an absent project; then the cursor must belong to this
// list, its filters and its order.
func taskListQuery(a domain.Actor, r TaskListRequest) (ports.TaskFilter, domain.Keyset, error) {
	if _, err := r.Page.Size(); err != nil {
		return ports.TaskFilter{}, domain.Keyset{}, err
	}
	f, q, err := taskFilter(a, r.ProjectID, r.Query)
	if err != nil {
		return ports.TaskFilter{}, domain.Keyset{}, err
	}
	k, err := r.Page.Keyset(taskListScope(a.WorkspaceID, r.ProjectID, q))
	if err != nil {
		return ports.TaskFilter{}, domain.Keyset{}, err
	}
	f.After, f.Limit = k.After, k.Rows()
	return f, k, nil
}

// taskFilter validates q and makes the store's filter for the tasks of
// project projectID ("" for every project) that q selects and the key sees,
// with q as the filter reads it (its me resolved). The filter's
// ProjectIDs is empty, not nil, when the key sees none of the projects
// asked for: the caller then answers without asking the store.
func taskFilter(a domain.Actor, projectID string, q domain.TaskQuery) (ports.TaskFilter, domain.TaskQuery, error) {
	if err := q.Validate(); err != nil {
		return ports.TaskFilter{}, q, err
	}
	if projectID != "" {
		if q.ProjectIDs != nil {
			return ports.TaskFilter{}, q, domain.Invalid(domain.ParamProjectID, "Is not a filter of one project's tasks.")
		}
		if !domain.IsID(projectID, domain.PrefixProject) || !a.SeesProject(projectID) {
			return ports.TaskFilter{}, q, domain.NotFound("project", projectID)
		}
	}
	if q.AssignedToMe {
		if a.UserID == "" {
			return ports.TaskFilter{}, q, domain.Invalid(domain.ParamAssigneeID, "me names the key's user, and this call has no key.")
		}
		q.AssigneeIDs = append(slices.Clone(q.AssigneeIDs), a.UserID)
		q.AssignedToMe = false
	}
	// A value given twice is the same value: counts from the projects'
	// counters must not add a status twice.
	f := ports.TaskFilter{
		WorkspaceID: a.WorkspaceID, Statuses: distinct(q.Statuses), AssigneeIDs: distinct(q.AssigneeIDs), Unassigned: q.Unassigned,
		DueAfter: q.DueAfter, DueBefore: q.DueBefore, UpdatedAfter: q.UpdatedAfter, Order: q.Order,
	}
	if q.Text != nil {
		f.Words = domain.SearchTerms(*q.Text)
	}
	switch {
	case projectID != "":
		f.ProjectIDs = []string{projectID}
	case q.ProjectIDs != nil:
		f.ProjectIDs = []string{}
		for _, id := range q.ProjectIDs {
			if a.SeesProject(id) && !slices.Contains(f.ProjectIDs, id) {
				f.ProjectIDs = append(f.ProjectIDs, id)
			}
		}
	case a.Restricted():
		f.ProjectIDs = slices.Clone(a.ProjectIDs)
	}
	return f, q, nil
}

// distinct is vals without repeats, in their first order; nil stays nil.
func distinct[T comparable](vals []T) []T {
	if vals == nil {
		return nil
	}
	out := make([]T, 0, len(vals))
	for _, v := range vals {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// ListMany is List for several lists of one project's tasks at once, with
// the same rules: validation, tenancy, cursors and pages. The i-th page or
// error answers reqs[i]. All the pages cost one statement, plus one when
// some page comes back empty (to tell an empty project from an absent one),
// so that GraphQL's Project.tasks under a list of projects costs the same
// whatever the number of projects. resource_not_found for an absent or
// foreign project; validation_failed for a bad page request or filter.
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
		if r.ProjectID == "" {
			errs[i] = domain.NotFound("project", r.ProjectID)
			continue
		}
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
		pages[i] = domain.NewPage(found[j], keysets[i], reqs[i].Query.Order.Position)
	}
	return pages, errs
}
