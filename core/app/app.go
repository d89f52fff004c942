// Package app holds the use cases: one service per aggregate. Authorisation,
// tenancy and event recording happen here, once, for every edge.
package app

import (
	"context"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Deps are the ports the services drive.
type Deps struct {
	Tx         ports.Transactor
	Clock      ports.Clock
	IDs        ports.IDGenerator
	Workspaces ports.WorkspaceStore
	Users      ports.UserStore
	Keys       ports.APIKeyStore
	Projects   ports.ProjectStore
	Tasks      ports.TaskStore
	// Events records events in the transaction of the change. When nil and
	// the webhook stores below are set, New records through the
	// transactional outbox; when nil otherwise, nothing is recorded.
	Events ports.EventRecorder

	// Webhooks (issue 4): subscriptions, the event log, deliveries, the
	// payload renderer of the outbox and the SSRF check of registration.
	Webhooks   ports.WebhookStore
	EventLog   ports.EventStore
	Deliveries ports.DeliveryStore
	Payloads   ports.PayloadRenderer
	Addresses  ports.AddressChecker
}

// App is the set of services both APIs call.
type App struct {
	Auth     *Auth
	Users    *Users
	Projects *Projects
	Tasks    *Tasks
	Admin    *Admin
	Webhooks *Webhooks

	deps Deps
	wake *signal // wakes this process's dispatchers after a commit
}

// New wires the services. A nil Clock or IDs gets the system one.
func New(d Deps, opts AuthOptions) *App {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.IDs == nil {
		d.IDs = RandomIDs{}
	}
	wake := newSignal()
	if d.Tx != nil {
		d.Tx = hookedTx{inner: d.Tx}
	}
	if d.Events == nil && d.Webhooks != nil && d.EventLog != nil && d.Deliveries != nil && d.Payloads != nil {
		d.Events = &outbox{d: d, wake: wake}
	}
	auth := newAuth(d, opts)
	return &App{
		Auth:     auth,
		Users:    &Users{d: d},
		Projects: &Projects{d: d},
		Tasks:    &Tasks{d: d},
		Admin:    &Admin{d: d, auth: auth},
		Webhooks: &Webhooks{d: d, wake: wake},
		deps:     d,
		wake:     wake,
	}
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }

// RandomIDs mints ids from crypto/rand.
type RandomIDs struct{}

// NewID returns a fresh id of the given kind.
func (RandomIDs) NewID(prefix string) string { return domain.NewID(prefix) }

// pageQuery turns a page request into the store's keyset arguments: the
// position after which to read, and how many rows (one more than the page, to
// learn whether more exist).
func pageQuery(req domain.PageRequest, scope string) (*domain.Position, int, error) {
	if err := domain.ValidateLimit("limit", req.Limit); err != nil {
		return nil, 0, err
	}
	if req.Cursor == "" {
		return nil, req.Limit + 1, nil
	}
	pos, err := domain.DecodeCursor("cursor", scope, req.Cursor)
	if err != nil {
		return nil, 0, err
	}
	return &pos, req.Limit + 1, nil
}

// record records an event in the current transaction. It is the one place
// events are born, so REST and GraphQL emit the same ones.
func (d Deps) record(ctx context.Context, workspaceID string, typ domain.EventType, data any, changes domain.Changes) error {
	if d.Events == nil {
		return nil
	}
	return d.Events.RecordEvent(ctx, domain.Event{
		ID: d.IDs.NewID(domain.PrefixEvent), WorkspaceID: workspaceID, Type: typ,
		CreatedAt: domain.Timestamp(d.Clock.Now()), Data: data, Previous: changes,
	})
}
