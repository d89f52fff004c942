package ports

import (
	"context"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// WebhookFilter selects webhooks of one workspace, a page at a time.
type WebhookFilter struct {
	WorkspaceID string
	After       *domain.Position
	Limit       int
}

// WebhookStore persists webhook subscriptions. Called by app.Webhooks (the
// API), by the outbox (inside the transaction of a change) and by the
// dispatcher (to deactivate a webhook that answered 410).
type WebhookStore interface {
	// CreateWebhook inserts w, secret included.
	CreateWebhook(ctx context.Context, w domain.Webhook) error
	// FindWebhookByID returns resource_not_found when absent or in another
	// workspace.
	FindWebhookByID(ctx context.Context, workspaceID, id string) (domain.Webhook, error)
	// FindWebhookByIDForUpdate also locks the row until the transaction ends,
	// so that concurrent updates (an API PATCH and a 410 from the receiver)
	// serialise. Call it inside Transactor.InTx. resource_not_found as above.
	FindWebhookByIDForUpdate(ctx context.Context, workspaceID, id string) (domain.Webhook, error)
	// FindWebhooks lists webhooks ordered by (created_at, id) after f.After.
	FindWebhooks(ctx context.Context, f WebhookFilter) ([]domain.Webhook, error)
	// UpdateWebhook writes the mutable fields of w (url, events, active,
	// secret, previous secret and its expiry, updated_at);
	// resource_not_found when absent.
	UpdateWebhook(ctx context.Context, w domain.Webhook) error
	// DeleteWebhook deletes the webhook and its deliveries;
	// resource_not_found when no row was deleted.
	DeleteWebhook(ctx context.Context, workspaceID, id string) error
	// CountWebhooks counts the workspace's webhooks. Inside a transaction
	// it first takes a lock that the other transactions' CountWebhooks of
	// the workspace wait for until this one ends, so that a cap checked by
	// counting holds under concurrent creates.
	CountWebhooks(ctx context.Context, workspaceID string) (int, error)
}

// EventStore keeps the event log: written by the outbox, read by the log's
// readers (app.Events) and by the live feed of subscriptions (app.Live).
type EventStore interface {
	// CreateEvents inserts es, each with its payload (payloads[i]), the
	// exact bytes every delivery of the event sends (rendered once, so that
	// every attempt and every redelivery is byte-identical). Events created
	// together take consecutive log positions, in the order given. Call it
	// inside the change's transaction. It returns, for each event, the ids
	// of its workspace's active webhooks subscribed to its type (sorted;
	// none is nil), as the transaction sees them: what the outbox fans the
	// event out to, read with the insert rather than by a statement of its
	// own, and without any webhook's secret.
	CreateEvents(ctx context.Context, es []domain.Event, payloads [][]byte) ([][]string, error)
	// PositionEvents gives the committed events that have no log position
	// yet the next positions, one sequencer at a time, so that positions
	// follow commit order; it returns how many it positioned. Readers call
	// it before reading, so that they see what committed before them. Where
	// the database can, it wakes the event watchers of every process once it
	// has positioned something.
	PositionEvents(ctx context.Context) (int64, error)
	// ListEvents lists a workspace's positioned events in log order after
	// f.AfterSeq, filtered.
	ListEvents(ctx context.Context, f EventFilter) ([]domain.LoggedEvent, error)
	// FindEvent returns a workspace's positioned event, or resource_not_found.
	FindEvent(ctx context.Context, workspaceID, id string) (domain.LoggedEvent, error)
	// LastPosition is the highest log position given so far (0 for none).
	LastPosition(ctx context.Context) (int64, error)
	// ReadLog lists up to limit positioned events of every workspace after
	// afterSeq, in log order: the live feed reads the log once per process
	// and sorts the events out to its subscribers itself.
	ReadLog(ctx context.Context, afterSeq int64, limit int) ([]domain.LoggedEvent, error)
	// PurgeEvents deletes up to limit events created before cutoff, with
	// their deliveries, except events with a pending delivery; it returns
	// how many events it deleted.
	PurgeEvents(ctx context.Context, cutoff time.Time, limit int) (int64, error)
}

// EventFilter selects events of one workspace, a page at a time.
type EventFilter struct {
	WorkspaceID string
	AfterSeq    int64
	Types       []domain.EventType // any of them; empty: every type
	ProjectID   *string
	// ProjectIDs, when not nil, keeps only the events of these projects (a
	// key restricted to projects).
	ProjectIDs []string
	// ProjectsOnly leaves out the events of no project (the workspace's own,
	// webhook.disabled), for a caller who may not see webhooks.
	ProjectsOnly bool
	Limit        int // rows to return; callers ask for one more than a page
}

// PayloadRenderer renders the webhook payload of an event: the public JSON
// event object of docs/api.md#webhooks, with data and previous_attributes in
// the same representation as the REST API. It fails only for an event whose
// data it cannot render (a programming error).
type PayloadRenderer interface {
	RenderEvent(e domain.Event) ([]byte, error)
}

// DeliveryFilter selects one webhook's deliveries, a page at a time. A nil
// Status matches every status.
type DeliveryFilter struct {
	WorkspaceID string
	WebhookID   string
	Status      *domain.DeliveryStatus
	After       *domain.Position
	Limit       int
}

// ClaimRequest asks for due deliveries to attempt.
type ClaimRequest struct {
	// Owner names the claiming dispatcher; only it may finish or release
	// what it claimed.
	Owner string
	// Now decides what is due: pending, next_attempt_at <= Now, and not
	// leased by anyone (or leased until before Now: its owner died).
	Now time.Time
	// LeaseUntil is when the claim lapses if the owner neither finishes nor
	// releases it, so that a crashed process's deliveries are retried.
	LeaseUntil time.Time
	// Limit is the most deliveries to return.
	Limit int
	// SkipWebhooks are webhooks whose deliveries not to claim (those at
	// the dispatcher's per-webhook concurrency cap).
	SkipWebhooks []string
	// PerWebhook, when positive, is the most deliveries of one webhook to
	// return, and Room lowers it for the webhooks named (those with
	// attempts in flight already), so that a claim does not take what the
	// dispatcher would have to give back at once. A store may ignore both;
	// the dispatcher releases what it cannot start.
	PerWebhook int
	Room       map[string]int
	// SkipWorkspaces, PerWorkspace and WorkspaceRoom are the same for
	// workspaces: one workspace's deliveries hold at most PerWorkspace of
	// the claim (WorkspaceRoom's, for the workspaces named). A claim takes
	// each workspace's oldest due delivery, then each one's second oldest,
	// and so on, so that claims interleave workspaces and one workspace's
	// backlog never delays another's deliveries by more than its share.
	SkipWorkspaces []string
	PerWorkspace   int
	WorkspaceRoom  map[string]int
}

// Dispatch is a claimed delivery with what sending it needs, read when it
// was claimed: the webhook's URL, current secret and previous secret with
// its expiry (empty and nil when there is none), and the event's payload.
type Dispatch struct {
	Delivery                domain.Delivery
	URL                     string
	Secret                  string
	PreviousSecret          string
	PreviousSecretExpiresAt *time.Time
	// Headers are the webhook's custom headers, sent with every attempt.
	Headers map[string]string
	Payload []byte
	// TraceParent is the W3C traceparent of the request that caused the
	// event, "" when it was not traced.
	TraceParent string
}

// DeliveryStore persists deliveries: one row per event owed to one webhook.
// Written by the outbox (creation), app.Webhooks (listing, redelivery) and
// the dispatcher (claims and attempt outcomes).
type DeliveryStore interface {
	// CreateDeliveries inserts ds, in the caller's transaction. Where the
	// database can, it also wakes the dispatchers of other processes once
	// that transaction commits.
	CreateDeliveries(ctx context.Context, ds []domain.Delivery) error
	// FindDeliveryByID returns resource_not_found when the delivery is absent
	// or not one of the webhook's in the workspace.
	FindDeliveryByID(ctx context.Context, workspaceID, webhookID, id string) (domain.Delivery, error)
	// FindDeliveries lists a webhook's deliveries ordered by (created_at, id)
	// after f.After, filtered by status when set.
	FindDeliveries(ctx context.Context, f DeliveryFilter) ([]domain.Delivery, error)
	// RescheduleDelivery writes a redelivery (status, next_attempt_at,
	// window_start) and wakes dispatchers as CreateDeliveries does. A lease
	// in force is left alone: an attempt in flight finishes and its outcome
	// is written over the redelivery. resource_not_found when absent.
	RescheduleDelivery(ctx context.Context, d domain.Delivery) error
	// ClaimDeliveries leases up to r.Limit due deliveries of active webhooks
	// to r.Owner, oldest due first, and returns them. Concurrent claims on
	// one database never return the same delivery while a lease is in force
	// (PostgreSQL: SELECT … FOR UPDATE SKIP LOCKED).
	ClaimDeliveries(ctx context.Context, r ClaimRequest) ([]Dispatch, error)
	// FinishDelivery writes the outcome of an attempt (status, attempts,
	// last_attempt_at, last_status_code, last_error, next_attempt_at) and
	// ends the lease, only while owner still holds it. It reports whether
	// it wrote: false when the lease was lost or the delivery deleted.
	FinishDelivery(ctx context.Context, d domain.Delivery, owner string) (bool, error)
	// FinishDeliveries is FinishDelivery for many outcomes at once, in as
	// few statements as the database allows, and reports how many it wrote
	// (those whose lease owner still held). With them it moves the failure
	// span of each webhook whose attempts it wrote: an attempt that
	// succeeded ends it (and, in one batch, outweighs the failures beside
	// it), failed attempts extend it. It returns the spans of the webhooks
	// whose attempts failed. It may be called again with the same outcomes
	// after an error: nothing is written twice while the lease holds.
	FinishDeliveries(ctx context.Context, owner string, outs []domain.Outcome) (int64, []domain.FailureSpan, error)
	// ReleaseDeliveries ends owner's leases on ids without an attempt, so
	// that any dispatcher may claim them at once.
	ReleaseDeliveries(ctx context.Context, owner string, ids []string) error
	// FailPendingDeliveries fails every pending delivery of a webhook, with
	// reason as last_error, and returns how many. Leases end: the outcome
	// of an attempt in flight is not written.
	FailPendingDeliveries(ctx context.Context, workspaceID, webhookID, reason string) (int64, error)
}

// EventWatcher tells the live feed about events other processes logged.
type EventWatcher interface {
	// WatchEvents returns a channel that receives a value (coalesced) soon
	// after another process positions new events in the log (PositionEvents),
	// and is closed when ctx ends. Where the database has no notifications it
	// receives one every poll interval instead.
	WatchEvents(ctx context.Context) (<-chan struct{}, error)
}

// DeliveryWatcher tells a dispatcher about deliveries committed by other
// processes. Called once by the dispatcher when it starts.
type DeliveryWatcher interface {
	// WatchDeliveries returns a channel that receives a value (coalesced)
	// soon after another process commits new or rescheduled deliveries, and
	// is closed when ctx ends. A database without notifications returns a
	// channel that only closes; the dispatcher's polling covers it.
	WatchDeliveries(ctx context.Context) (<-chan struct{}, error)
}

// WebhookAttempt is one attempt to send an event to a webhook.
type WebhookAttempt struct {
	URL string
	// Secret signs X-service-Signature and the first webhook-signature
	// entry; PreviousSecret, when not empty (a rotation's grace period),
	// signs a second webhook-signature entry.
	Secret         string
	PreviousSecret string
	EventID        string
	EventType      domain.EventType
	// Attempt is the attempt's number, 1 for the first; sent as
	// X-service-Delivery-Attempt.
	Attempt int
	Body    []byte
	// Headers are the webhook's custom headers (domain.ParseWebhookHeaders
	// keeps the service's own out of them).
	Headers map[string]string
	// WorkspaceID, WebhookID and DeliveryID name the attempt in its trace.
	WorkspaceID, WebhookID, DeliveryID string
	// TraceParent is the W3C traceparent of the request that caused the
	// event ("" when it was not traced): the attempt continues its trace.
	TraceParent string
}

// WebhookSender makes one delivery attempt over HTTP: it signs and POSTs
// the body with the headers of docs/api.md#webhook-headers, within its timeout,
// never following redirects and refusing to connect to a private address
// unless allowed. Called by the dispatcher only. It returns no error: a
// failure is an outcome (StatusCode 0 with Err); retrying is the core's
// decision.
type WebhookSender interface {
	Send(ctx context.Context, a WebhookAttempt) domain.AttemptResult
}

// AddressChecker applies the SSRF rule when a URL is registered. Called by
// app.Webhooks on create and when a PATCH changes the url.
type AddressChecker interface {
	// CheckWebhookURL resolves the URL's host and returns validation_failed
	// (param url) when it does not resolve or any of its addresses is
	// loopback, private, link-local or unspecified, unless private
	// addresses are allowed.
	CheckWebhookURL(ctx context.Context, rawURL string) error
}
