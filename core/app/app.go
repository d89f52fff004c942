// Package app holds the use cases: one service per aggregate. Authorisation,
// tenancy and event recording happen here, once, for every edge.
package app

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Deps are every adapter the core runs on. New, the composition root, hands
// each service only the ports it uses. Every port is required (New panics
// on a missing one: a wiring mistake, not a feature switch); only Clock and
// IDs default, to the system ones.
type Deps struct {
	Tx         ports.Transactor
	Clock      ports.Clock
	IDs        ports.IDGenerator
	Workspaces ports.WorkspaceStore
	Users      ports.UserStore
	Keys       ports.APIKeyStore
	Projects   ports.ProjectStore
	Tasks      ports.TaskStore
	// Webhooks: subscriptions, the event log, deliveries, the payload
	// renderer of the outbox and the SSRF check of registration. Every
	// change records its event through the transactional outbox.
	Webhooks   ports.WebhookStore
	EventLog   ports.EventStore
	Deliveries ports.DeliveryStore
	Payloads   ports.PayloadRenderer
	Addresses  ports.AddressChecker
	// EventWatch tells the live feed of events other processes logged.
	EventWatch ports.EventWatcher
	// Answers keeps the answers of keyed requests, committed with their
	// changes.
	Answers ports.AnswerStore
	// Audit keeps the audit log, written in the transactions of the
	// changes it records.
	Audit ports.AuditStore
}

// App is the set of services both APIs call.
type App struct {
	Auth     *Auth
	Users    *Users
	Projects *Projects
	Tasks    *Tasks
	Admin    *Admin
	APIKeys  *APIKeys
	Webhooks *Webhooks
	Events   *Events
	Audit    *Audit
	// Live is the feed of subscriptions; LiveOptions configure it, and the
	// composition root runs it (Live.Run).
	Live *Live

	// What NewDispatcher needs besides its sender and watcher.
	tx         ports.Transactor
	clock      ports.Clock
	webhooks   ports.WebhookStore
	deliveries ports.DeliveryStore
	wake       *Signal // wakes this process's dispatchers after a commit
	eventLog   ports.EventStore
	payloads   ports.PayloadRenderer
	ids        ports.IDGenerator
	logged     *Signal // wakes the live feed after events commit
	audit      auditLog
}

// Options tune the services; zero values take the defaults.
type Options struct {
	Auth AuthOptions
	Live LiveOptions
}

// New wires the services over d. A nil Clock or IDs gets the system one;
// any other missing port panics.
func New(d Deps, o Options) *App {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.IDs == nil {
		d.IDs = RandomIDs{}
	}
	mustHave(map[string]any{
		"Tx": d.Tx, "Workspaces": d.Workspaces, "Users": d.Users, "Keys": d.Keys, "Projects": d.Projects,
		"Tasks": d.Tasks, "Webhooks": d.Webhooks, "EventLog": d.EventLog, "Deliveries": d.Deliveries,
		"Payloads": d.Payloads, "Addresses": d.Addresses, "EventWatch": d.EventWatch,
		"Answers": d.Answers, "Audit": d.Audit,
	})
	wake, logged := NewSignal(), NewSignal()
	tx := hookedTx{inner: d.Tx}
	events := &outbox{
		ids: d.IDs, events: d.EventLog, deliveries: d.Deliveries,
		payloads: d.Payloads, wake: wake, logged: logged,
	}
	audit := NewAudit(AuditDeps{Store: d.Audit, Clock: d.Clock, IDs: d.IDs})
	auth := NewAuth(AuthDeps{Keys: d.Keys, Clock: d.Clock, Tx: tx, Audit: audit.log}, o.Auth)
	return &App{
		Auth:  auth,
		Users: NewUsers(UsersDeps{Users: d.Users}),
		Projects: NewProjects(ProjectsDeps{
			Tx: tx, Clock: d.Clock, IDs: d.IDs, Projects: d.Projects, Events: events, Answers: d.Answers, Audit: audit.log,
		}),
		Tasks: NewTasks(TasksDeps{
			Tx: tx, Clock: d.Clock, IDs: d.IDs, Tasks: d.Tasks, Projects: d.Projects, Users: d.Users, Events: events,
			Answers: d.Answers,
		}),
		Admin: NewAdmin(AdminDeps{
			Tx: tx, Clock: d.Clock, IDs: d.IDs, Workspaces: d.Workspaces, Users: d.Users, Keys: d.Keys, Projects: d.Projects, Auth: auth,
			Audit: audit.log,
		}),
		APIKeys: NewAPIKeys(keyDeps{
			Tx: tx, Clock: d.Clock, IDs: d.IDs, Keys: d.Keys, Users: d.Users, Projects: d.Projects, Answers: d.Answers,
			Audit: audit.log,
		}, auth),
		Webhooks: NewWebhooks(WebhooksDeps{
			Tx: tx, Clock: d.Clock, IDs: d.IDs, Webhooks: d.Webhooks, Deliveries: d.Deliveries,
			Addresses: d.Addresses, Wake: wake, EventLog: d.EventLog, Payloads: d.Payloads, Answers: d.Answers,
			Audit: audit.log,
		}),
		Events: NewEvents(EventsDeps{Log: d.EventLog, Projects: d.Projects, Clock: d.Clock}),
		Audit:  audit,
		Live:   NewLive(LiveDeps{Log: d.EventLog, Projects: d.Projects, Watch: d.EventWatch}, logged, o.Live),
		tx:     tx, clock: d.Clock, webhooks: d.Webhooks, deliveries: d.Deliveries, wake: wake,
		eventLog: d.EventLog, payloads: d.Payloads, ids: d.IDs, logged: logged, audit: audit.log,
	}
}

// mustHave panics naming the ports of deps that are nil: the core refuses
// to run with part of its wiring missing rather than silently doing less.
func mustHave(deps map[string]any) {
	var missing []string
	for name, p := range deps {
		if p == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		panic(fmt.Sprintf("app: missing ports: %s", strings.Join(missing, ", ")))
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

// newEvent is an event about to be recorded. It is the one place events are
// born, so REST and GraphQL emit the same ones.
func newEvent(ids ports.IDGenerator, clock ports.Clock, workspaceID string, typ domain.EventType, data any, changes domain.Changes) domain.Event {
	return domain.Event{
		ID: ids.NewID(domain.PrefixEvent), WorkspaceID: workspaceID, Type: typ,
		CreatedAt: domain.Timestamp(clock.Now()), Data: data, Previous: changes,
	}
}
