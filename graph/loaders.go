package graph

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/vikstrous/dataloadgen"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// loaders batch the per-item lookups of one request (vikstrous/dataloadgen):
// the Task.assignee and Task.project of N tasks, and the Project.tasks pages
// of N projects, each cost one statement rather than N. They are created per
// request, for one actor, so a cached value never crosses requests, callers
// or workspaces.
type loaders struct {
	app       *app.App
	who       domain.Actor
	users     *dataloadgen.Loader[string, domain.User]
	projects  *dataloadgen.Loader[string, domain.Project]
	taskPages *dataloadgen.Loader[taskPageKey, domain.Page[domain.Task]]

	mu sync.Mutex
	// lists are the lists of projects the request returned, by the id of
	// each project in them (see prefetchSiblings).
	lists map[string]*projectList
}

// taskPageKey is one Project.tasks call: the project and the field's
// arguments.
type taskPageKey struct {
	projectID string
	args      taskPageArgs
}

// taskPageArgs are the arguments of a Project.tasks field, as gqlgen decoded
// them, in comparable form (they key the loader and the prefetches): query
// is the JSON of the field's domain.TaskQuery, read back by listTaskPages.
// withAssignees says the selection reads the tasks' assignees, so the page's
// batch also queues those users at once (see newLoaders).
type taskPageArgs struct {
	query         string
	page          domain.PageRequest
	withAssignees bool
}

func newTaskPageArgs(req domain.PageRequest, q domain.TaskQuery, withAssignees bool) taskPageArgs {
	b, err := json.Marshal(q)
	if err != nil { // a struct of strings, times and bools always marshals
		panic(err)
	}
	return taskPageArgs{query: string(b), page: req, withAssignees: withAssignees}
}

func (a taskPageArgs) taskQuery() (domain.TaskQuery, error) {
	var q domain.TaskQuery
	err := json.Unmarshal([]byte(a.query), &q)
	return q, err
}

// projectList is one list of projects a resolver returned: the ids in it,
// and the Project.tasks arguments whose pages were loaded for all of them.
type projectList struct {
	ids []string
	mu  sync.Mutex // held while a prefetch runs, so that its siblings wait for it
	got map[taskPageArgs]bool
}

func newLoaders(a *app.App, who domain.Actor, wait time.Duration) *loaders {
	l := &loaders{app: a, who: who, lists: map[string]*projectList{}}
	// A batch larger than ports.MaxBatch keys would be split by the store
	// anyway; the loaders split it first, so that no call holds more.
	opt, capacity := dataloadgen.WithWait(wait), dataloadgen.WithBatchCapacity(ports.MaxBatch)
	l.users = dataloadgen.NewLoader(func(ctx context.Context, ids []string) ([]domain.User, []error) {
		users, err := a.Users.GetMany(ctx, who, ids)
		return byID(ids, users, err, "user", func(u domain.User) string { return u.ID })
	}, opt, capacity)
	l.projects = dataloadgen.NewLoader(func(ctx context.Context, ids []string) ([]domain.Project, []error) {
		ps, err := a.Projects.GetMany(ctx, who, ids)
		return byID(ids, ps, err, "project", func(p domain.Project) string { return p.ID })
	}, opt, capacity)
	l.taskPages = dataloadgen.NewLoader(func(ctx context.Context, keys []taskPageKey) ([]domain.Page[domain.Task], []error) {
		pages, errs := l.listTaskPages(ctx, keys)
		// Queue the assignees of every task of the batch now, from this one
		// goroutine, so that they land in one users batch whatever the
		// timing of the Task.assignee resolvers, which then find them cached.
		for i, k := range keys {
			if !k.args.withAssignees {
				continue
			}
			for _, t := range pages[i].Items {
				if t.AssigneeID != nil {
					l.users.LoadThunk(ctx, *t.AssigneeID)
				}
			}
		}
		return pages, errs
	}, opt)
	return l
}

func (l *loaders) listTaskPages(ctx context.Context, keys []taskPageKey) ([]domain.Page[domain.Task], []error) {
	reqs := make([]app.TaskListRequest, len(keys))
	for i, k := range keys {
		q, err := k.args.taskQuery()
		if err != nil {
			pages := make([]domain.Page[domain.Task], len(keys))
			errs := make([]error, len(keys))
			for j := range errs {
				errs[j] = err
			}
			return pages, errs
		}
		reqs[i] = app.TaskListRequest{ProjectID: k.projectID, Query: q, Page: k.args.page}
	}
	return l.app.Tasks.ListMany(ctx, l.who, reqs)
}

// listed remembers ps as one list of projects, so that the first of their
// Project.tasks fields loads the pages of all of them (prefetchSiblings).
func (l *loaders) listed(ps []domain.Project) {
	list := &projectList{ids: make([]string, len(ps)), got: map[taskPageArgs]bool{}}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, p := range ps {
		list.ids[i] = p.ID
		l.lists[p.ID] = list
	}
}

// taskPage is the page a Project.tasks field asks for. The first such field
// of a list of projects loads the page with the same arguments of every
// project of the list, in one statement, and the others find theirs cached:
// left to the dataloader's timer, the batches would be whatever it
// gathered, two or more under CPU load, and every level of the query would
// wait for a timer.
func (l *loaders) taskPage(ctx context.Context, key taskPageKey) (domain.Page[domain.Task], error) {
	l.mu.Lock()
	list := l.lists[key.projectID]
	l.mu.Unlock()
	if list != nil {
		list.mu.Lock()
		if !list.got[key.args] {
			list.got[key.args] = true
			keys := make([]taskPageKey, len(list.ids))
			for i, id := range list.ids {
				keys[i] = taskPageKey{projectID: id, args: key.args}
			}
			l.prefetchTaskPages(ctx, keys)
		}
		list.mu.Unlock()
	}
	return l.taskPages.Load(ctx, key)
}

// prefetchTaskPages loads the task pages of keys, and the assignees of their
// tasks when a key asks for them, now, in one statement each, and caches
// them for the Project.tasks and Task.assignee resolvers that follow. A page
// or user that failed is left out of the cache, so that its resolver loads
// it again and reports the error in place.
func (l *loaders) prefetchTaskPages(ctx context.Context, keys []taskPageKey) {
	if len(keys) == 0 {
		return
	}
	pages, errs := l.listTaskPages(ctx, keys)
	seen := map[string]bool{}
	var assignees []string
	for i, k := range keys {
		if errs != nil && errs[i] != nil {
			continue
		}
		l.taskPages.Prime(k, pages[i])
		if !k.args.withAssignees {
			continue
		}
		for _, t := range pages[i].Items {
			if id := t.AssigneeID; id != nil && !seen[*id] {
				seen[*id] = true
				assignees = append(assignees, *id)
			}
		}
	}
	if len(assignees) == 0 {
		return
	}
	users, err := l.app.Users.GetMany(ctx, l.who, assignees)
	if err != nil {
		return
	}
	for _, u := range users {
		l.users.Prime(u.ID, u)
	}
}

// byID orders the values found for ids as the keys, and answers the ids not
// found with resource_not_found.
func byID[T any](ids []string, found []T, err error, kind string, id func(T) string) ([]T, []error) {
	if err != nil {
		return nil, []error{err}
	}
	index := make(map[string]T, len(found))
	for _, v := range found {
		index[id(v)] = v
	}
	out := make([]T, len(ids))
	var errs []error
	for i, k := range ids {
		v, ok := index[k]
		if !ok {
			if errs == nil {
				errs = make([]error, len(ids))
			}
			errs[i] = domain.NotFound(kind, k)
			continue
		}
		out[i] = v
	}
	return out, errs
}

// primeProjects caches projects the request already holds, so that the
// Task.project of their tasks costs nothing.
func (l *loaders) primeProjects(ps ...domain.Project) {
	for _, p := range ps {
		l.projects.Prime(p.ID, p)
	}
}

// forget drops every cached value. Mutations call it: what a mutation
// changed must not be answered from the cache by a later field.
func (l *loaders) forget() {
	l.users.ClearAll()
	l.projects.ClearAll()
	l.taskPages.ClearAll()
	l.mu.Lock()
	clear(l.lists)
	l.mu.Unlock()
}
