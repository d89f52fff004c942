// Package ports declares what the core needs from the outside (stores, the
// transaction boundary, clock, ids) and what it offers.
//
// Store methods never check permissions: the services in core/app do that.
// They do scope every read to a workspace, so tenancy cannot be forgotten at
// a call site. A store returns *domain.Error with resource_not_found for an
// absent row, resource_already_exists for a unique violation, and any other
// failure as a plain error (reported to clients as internal_error).
package ports

import (
	"context"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// MaxBatch is the most keys one statement of a store carries: a store
// method given more (FindUsersByIDs, FindProjectsByIDs, FindTaskPages, …)
// splits them into statements of at most this many, so that no statement
// grows with a client's query (a GraphQL operation with many aliases can
// gather thousands of keys in one dataloader batch), and callers that batch
// keys themselves batch at most this many.
const MaxBatch = 1000

// Transactor runs fn in one database transaction. The transaction travels in
// the context given to fn; every store method called with that context joins
// it. fn's error rolls everything back. Nested calls join the outer
// transaction.
type Transactor interface {
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}

// Clock tells the time; tests substitute a controllable one.
type Clock interface {
	Now() time.Time
}

// IDGenerator mints resource ids with a kind prefix.
type IDGenerator interface {
	NewID(prefix string) string
}

// WorkspaceStore persists workspaces.
type WorkspaceStore interface {
	// CreateWorkspace inserts w.
	CreateWorkspace(ctx context.Context, w domain.Workspace) error
	// FindWorkspaceByID returns resource_not_found when absent.
	FindWorkspaceByID(ctx context.Context, id string) (domain.Workspace, error)
	// ListWorkspaces lists every workspace, oldest first. Only for the
	// operator's command-line tools.
	ListWorkspaces(ctx context.Context) ([]domain.Workspace, error)
	// CountWorkspaces counts every workspace; the first start bootstraps when 0.
	CountWorkspaces(ctx context.Context) (int64, error)
	// LockWorkspaces keeps other transactions from creating workspaces until
	// the caller's transaction ends, so that servers starting together on an
	// empty database bootstrap it once. Call it inside Transactor.InTx.
	LockWorkspaces(ctx context.Context) error
}

// UserFilter selects users of one workspace, a page at a time.
type UserFilter struct {
	WorkspaceID string
	After       *domain.Position
	Limit       int // rows to return; callers ask for one more than a page
}

// UserStore persists users.
type UserStore interface {
	// CreateUser inserts u; resource_already_exists (param email) when the
	// email is taken in the workspace.
	CreateUser(ctx context.Context, u domain.User) error
	// FindUserByID returns resource_not_found when absent or in another workspace.
	FindUserByID(ctx context.Context, workspaceID, id string) (domain.User, error)
	// FindUserByIDAnyWorkspace finds a user wherever it lives. Only for the
	// operator's command-line tools, which act above tenancy; never call it
	// on behalf of an API caller.
	FindUserByIDAnyWorkspace(ctx context.Context, id string) (domain.User, error)
	// FindUsersByEmailAnyWorkspace finds the users with that email (any
	// case) in every workspace, oldest first; operator tools only.
	FindUsersByEmailAnyWorkspace(ctx context.Context, email string) ([]domain.User, error)
	// FindUsersByIDs returns the users of the workspace among ids, in no order;
	// absent ids are left out (dataloaders use it).
	FindUsersByIDs(ctx context.Context, workspaceID string, ids []string) ([]domain.User, error)
	// FindUsers lists users ordered by (created_at, id) after f.After.
	FindUsers(ctx context.Context, f UserFilter) ([]domain.User, error)
	// SetUserRole writes a user's role; resource_not_found when absent.
	SetUserRole(ctx context.Context, workspaceID, id string, role domain.Role) error
}

// APIKeyStore persists API keys.
type APIKeyStore interface {
	// CreateAPIKey inserts k.
	CreateAPIKey(ctx context.Context, k domain.APIKey) error
	// FindAPIKeyByHash returns the key with that secret hash and its user, or
	// resource_not_found. Revoked and expired keys are returned too; the
	// caller decides.
	FindAPIKeyByHash(ctx context.Context, hash string) (domain.APIKey, domain.User, error)
	// FindAPIKeyByPrefix returns the key whose secret begins with prefix
	// (domain.KeyPrefix), or resource_not_found; with several (a prefix is
	// 47 random bits, so practically never), any one.
	FindAPIKeyByPrefix(ctx context.Context, prefix string) (domain.APIKey, error)
	// FindAPIKeyByID returns resource_not_found when absent.
	FindAPIKeyByID(ctx context.Context, id string) (domain.APIKey, error)
	// FindAPIKeysByUser lists a user's keys, oldest first.
	FindAPIKeysByUser(ctx context.Context, userID string) ([]domain.APIKey, error)
	// RevokeAPIKey sets revoked_at unless already set, and returns the key.
	RevokeAPIKey(ctx context.Context, id string, at time.Time) (domain.APIKey, error)
	// TouchAPIKey records that the key was used at at.
	TouchAPIKey(ctx context.Context, id string, at time.Time) error
	// FindAPIKeys lists the keys of f's workspace (and user, when set) by
	// (created_at, id) after f.After.
	FindAPIKeys(ctx context.Context, f APIKeyFilter) ([]domain.APIKey, error)
	// CountUnrevokedAPIKeys counts the user's keys not revoked. Inside a
	// transaction it first takes a lock that the other transactions'
	// counts of the user wait for until this one ends.
	CountUnrevokedAPIKeys(ctx context.Context, userID string) (int, error)
	// RenameAPIKey writes a key's name; resource_not_found when absent.
	RenameAPIKey(ctx context.Context, id, name string) error
}

// APIKeyFilter selects the keys of a workspace, or of one of its users, a
// page at a time.
type APIKeyFilter struct {
	WorkspaceID string
	UserID      *string
	After       *domain.Position
	Limit       int
}

// ProjectFilter selects projects of one workspace, a page at a time.
type ProjectFilter struct {
	WorkspaceID string
	// IDs, when not nil, keeps only these projects (a key restricted to
	// projects).
	IDs   []string
	After *domain.Position
	Limit int
}

// ProjectStore persists projects.
type ProjectStore interface {
	// CreateProject inserts p; resource_already_exists (param key) when the
	// key is taken in the workspace.
	CreateProject(ctx context.Context, p domain.Project) error
	// FindProjectByID returns resource_not_found when absent or in another workspace.
	FindProjectByID(ctx context.Context, workspaceID, id string) (domain.Project, error)
	// FindProjectsByIDs returns the projects of the workspace among ids, in no
	// order; absent ids are left out.
	FindProjectsByIDs(ctx context.Context, workspaceID string, ids []string) ([]domain.Project, error)
	// FindProjects lists projects ordered by (created_at, id) after f.After.
	FindProjects(ctx context.Context, f ProjectFilter) ([]domain.Project, error)
	// FindProjectByIDForUpdate is FindProjectByID that also locks the row
	// until the transaction ends, so that concurrent updates serialise. Call
	// it inside Transactor.InTx.
	FindProjectByIDForUpdate(ctx context.Context, workspaceID, id string) (domain.Project, error)
	// UpdateProject writes the mutable fields of p (name, updated_at).
	UpdateProject(ctx context.Context, p domain.Project) error
}

// TaskFilter selects tasks of a workspace, a page at a time. Nil and false
// fields do not filter; the filters AND (docs/finding-tasks.md).
type TaskFilter struct {
	WorkspaceID string
	// ProjectIDs keeps the tasks of these projects; nil keeps every
	// project's. Never empty: a query that can match no project is not run.
	ProjectIDs []string
	Statuses   []domain.Status
	// AssigneeIDs and Unassigned make one set: the tasks assigned to one
	// of the ids, or to nobody when Unassigned.
	AssigneeIDs  []string
	Unassigned   bool
	DueAfter     *time.Time // due_at >= DueAfter
	DueBefore    *time.Time // due_at < DueBefore
	UpdatedAfter *time.Time // updated_at > UpdatedAfter
	// Words must each be a word or word prefix of the title (lowercase
	// letters and digits, domain.SearchTerms): at most
	// domain.MaxSearchWords, none repeated or the start of another.
	Words []string
	Order domain.TaskOrder
	// After is the position to read after, in Order; nil for the first
	// page.
	After *domain.Position
	Limit int
}

// TaskStore persists tasks.
type TaskStore interface {
	// CreateTasks inserts ts, of one project, in as few statements as the
	// database's bounds allow; resource_not_found when the project, or an
	// assignee, is absent from the tasks' workspace (the foreign keys'
	// refusal, which does not say which). The project's counts (task_count and the
	// counts by status) are the store's to keep, exact after every commit of
	// a task's insertion, status change or deletion.
	CreateTasks(ctx context.Context, ts []domain.Task) error
	// CreateTaskLogged inserts t with its event as CreateTasks and
	// EventStore.CreateEvents would, and one delivery, domain.NewDelivery
	// with an id from o.NewDeliveryID, for each of the workspace's active
	// webhooks subscribed to the event's type: all of them or none, in the
	// caller's transaction when there is one. It returns how many
	// deliveries it wrote. A project or an assignee refused by the tasks'
	// foreign keys is resource_not_found, as in CreateTasks.
	CreateTaskLogged(ctx context.Context, t domain.Task, o Outboxed) (deliveries int, err error)
	// FindTaskByID returns resource_not_found when absent or in another workspace.
	FindTaskByID(ctx context.Context, workspaceID, id string) (domain.Task, error)
	// FindTaskByIDForUpdate also locks the row until the transaction ends.
	// Call it inside Transactor.InTx.
	FindTaskByIDForUpdate(ctx context.Context, workspaceID, id string) (domain.Task, error)
	// FindTasksByIDs returns the tasks of the workspace among ids, in no order.
	FindTasksByIDs(ctx context.Context, workspaceID string, ids []string) ([]domain.Task, error)
	// FindTasks lists the tasks f selects, in f.Order after f.After, at
	// most f.Limit of them.
	FindTasks(ctx context.Context, f TaskFilter) ([]domain.Task, error)
	// CountTasks counts the tasks f selects (its order and page ignored) by
	// group, in ascending key order (nil, the unassigned, first), leaving
	// out empty groups.
	CountTasks(ctx context.Context, f TaskFilter, by domain.TaskCountGroup) ([]domain.TaskCount, error)
	// FindTaskPages is FindTasks for several filters at once, in one
	// statement, each filter keeping its own keyset position and limit: the
	// i-th result answers fs[i]. Called by app.Tasks.ListMany (GraphQL's
	// nested Project.tasks, batched by a dataloader); returns no domain
	// errors, an empty result for a filter that matches nothing.
	FindTaskPages(ctx context.Context, fs []TaskFilter) ([][]domain.Task, error)
	// UpdateTask writes the mutable fields of t.
	UpdateTask(ctx context.Context, t domain.Task) error
	// DeleteTask deletes the task; resource_not_found when no row was deleted.
	DeleteTask(ctx context.Context, workspaceID, id string) error
}

// EventRecorder records events, and the deliveries they owe to subscribed
// webhooks, in the caller's transaction: a committed change always has its
// events, a rolled-back one never does. Events recorded together take
// consecutive positions in the log, in the order given.
type EventRecorder interface {
	RecordEvent(ctx context.Context, es ...domain.Event) error
	// RecordWith records e, and its deliveries, with the write of a change
	// that a store does in one operation: write is given the event
	// rendered (Outboxed) and returns how many deliveries it wrote.
	RecordWith(ctx context.Context, e domain.Event, write func(ctx context.Context, o Outboxed) (deliveries int, err error)) error
}

// Outboxed is an event ready for a store to write with the change it
// records: its rendered payload, and where its deliveries' ids come from
// (a store may mint more than it uses).
type Outboxed struct {
	Event         domain.Event
	Payload       []byte
	NewDeliveryID func() string
}
