package app

import (
	"context"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Webhooks is the webhook use cases. Every call, reads included, is for
// admins only (docs/api.md#tenancy-keys-and-roles), with the webhooks
// scopes and a key not restricted to projects (docs/keys.md). The signing secret leaves the core only
// from Create and RotateSecret; every other call returns the webhook with
// Secret empty, so that no edge can show it by mistake.
type Webhooks struct{ d WebhooksDeps }

// WebhooksDeps are the ports Webhooks uses. Addresses applies the SSRF rule
// to registered URLs; Wake is notified once a redelivery commits.
type WebhooksDeps struct {
	Tx         ports.Transactor
	Clock      ports.Clock
	IDs        ports.IDGenerator
	Webhooks   ports.WebhookStore
	Deliveries ports.DeliveryStore
	Addresses  ports.AddressChecker
	Wake       *Signal
	// EventLog and Payloads store a ping's event (outside the log: it is
	// never positioned) for its one delivery.
	EventLog ports.EventStore
	Payloads ports.PayloadRenderer
	Answers  ports.AnswerStore
	Audit    auditLog
}

// NewWebhooks makes the webhook use cases.
func NewWebhooks(d WebhooksDeps) *Webhooks {
	mustHave(map[string]any{
		"Tx": d.Tx, "Clock": d.Clock, "IDs": d.IDs, "Webhooks": d.Webhooks, "Deliveries": d.Deliveries,
		"Addresses": d.Addresses, "EventLog": d.EventLog, "Payloads": d.Payloads, "Answers": d.Answers,
	})
	if d.Wake == nil {
		panic("app: missing Wake")
	}
	return &Webhooks{d: d}
}

// Create registers a webhook in the caller's workspace and returns it with
// its secret. validation_failed (param url) for a malformed URL or one whose
// host is or resolves to a private address (unless those are allowed), and
// (param events) for an empty or unknown event list; resource_limit_reached
// when the workspace has MaxWebhooksPerWorkspace webhooks.
func (s *Webhooks) Create(ctx context.Context, a domain.Actor, in domain.WebhookFields) (domain.Webhook, error) {
	if err := allowWebhooks(a, domain.ScopeWebhooksWrite); err != nil {
		return domain.Webhook{}, err
	}
	// The URL is checked first, the address included, as on an update.
	if u, ok := in.URL.Get(); ok {
		if err := s.checkURL(ctx, u); err != nil {
			return domain.Webhook{}, err
		}
	}
	w, err := domain.NewWebhook(s.d.IDs.NewID(domain.PrefixWebhook), a.WorkspaceID, in, s.d.Clock.Now())
	if err != nil {
		return domain.Webhook{}, err
	}
	err = s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := claimKey(ctx, s.d.Answers); err != nil {
			return err
		}
		n, err := s.d.Webhooks.CountWebhooks(ctx, a.WorkspaceID)
		if err != nil {
			return err
		}
		if n >= domain.MaxWebhooksPerWorkspace {
			return domain.Refusal(domain.CodeLimitReached, domain.LimitWebhooks,
				"This workspace has %d webhooks, the most it may. Delete one before you create another.", domain.MaxWebhooksPerWorkspace)
		}
		if err := s.d.Webhooks.CreateWebhook(ctx, w); err != nil {
			return err
		}
		if err := commitAnswer(ctx, s.d.Answers, w); err != nil {
			return err
		}
		return s.d.Audit.record(ctx, a.WorkspaceID, domain.AuditWebhookCreated, auditActor(ctx, a), webhookTarget(w.ID), domain.ChangesWebhookCreated(w))
	})
	if err != nil {
		return domain.Webhook{}, err
	}
	return w, nil
}

// allowWebhooks checks a webhook call: the admin role, the scope s, and a
// key not restricted to projects (a webhook receives the events of every
// project).
func allowWebhooks(a domain.Actor, s domain.Scope) error {
	if err := a.Require(s); err != nil {
		return err
	}
	return a.RequireUnrestricted("manage webhooks")
}

// checkURL validates a URL's shape, then (a DNS lookup, so never inside a
// transaction) the addresses its host resolves to.
func (s *Webhooks) checkURL(ctx context.Context, raw string) error {
	if _, err := domain.ValidateWebhookURL(raw); err != nil {
		return err
	}
	return s.d.Addresses.CheckWebhookURL(ctx, raw)
}

// Get returns a webhook of the caller's workspace, or resource_not_found.
func (s *Webhooks) Get(ctx context.Context, a domain.Actor, id string) (domain.Webhook, error) {
	if err := allowWebhooks(a, domain.ScopeWebhooksRead); err != nil {
		return domain.Webhook{}, err
	}
	if !domain.IsID(id, domain.PrefixWebhook) {
		return domain.Webhook{}, domain.NotFound("webhook", id)
	}
	w, err := s.d.Webhooks.FindWebhookByID(ctx, a.WorkspaceID, id)
	return withoutSecret(w), err
}

// List pages through the caller's webhooks, oldest first.
func (s *Webhooks) List(ctx context.Context, a domain.Actor, req domain.PageRequest) (domain.Page[domain.Webhook], error) {
	var none domain.Page[domain.Webhook]
	if err := allowWebhooks(a, domain.ScopeWebhooksRead); err != nil {
		return none, err
	}
	k, err := req.Keyset(webhookListScope(a.WorkspaceID))
	if err != nil {
		return none, err
	}
	ws, err := s.d.Webhooks.FindWebhooks(ctx, ports.WebhookFilter{WorkspaceID: a.WorkspaceID, After: k.After, Limit: k.Rows()})
	if err != nil {
		return none, err
	}
	for i := range ws {
		ws[i] = withoutSecret(ws[i])
	}
	return domain.NewPage(ws, k, domain.Webhook.Position), nil
}

// Update applies a merge patch (url, events, active). A new url passes the
// same checks as on creation. Deactivating a webhook fails its pending
// deliveries: an inactive webhook gets nothing. A patch that changes nothing
// writes nothing.
func (s *Webhooks) Update(ctx context.Context, a domain.Actor, id string, patch domain.WebhookFields) (domain.Webhook, error) {
	if err := allowWebhooks(a, domain.ScopeWebhooksWrite); err != nil {
		return domain.Webhook{}, err
	}
	if !domain.IsID(id, domain.PrefixWebhook) {
		return domain.Webhook{}, domain.NotFound("webhook", id)
	}
	if u, ok := patch.URL.Get(); ok {
		if err := s.checkURL(ctx, u); err != nil {
			return domain.Webhook{}, err
		}
	}
	var out domain.Webhook
	err := s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.failIfDeactivating(ctx, a.WorkspaceID, id, patch); err != nil {
			return err
		}
		w, err := s.d.Webhooks.FindWebhookByIDForUpdate(ctx, a.WorkspaceID, id)
		if err != nil {
			return err
		}
		next, changed, err := w.Apply(patch, s.d.Clock.Now())
		if err != nil || !changed {
			out = next
			return err
		}
		out = next
		if err := s.d.Webhooks.UpdateWebhook(ctx, next); err != nil {
			return err
		}
		return s.recordUpdate(ctx, auditActor(ctx, a), w, next)
	})
	return withoutSecret(out), err
}

// webhookTarget names a webhook as an audit record's target.
func webhookTarget(id string) domain.AuditTarget {
	return domain.AuditTarget{Type: domain.AuditTargetWebhook, ID: id}
}

// recordUpdate records what an update changed: webhook.disabled or
// webhook.enabled for its active flag, webhook.updated for the rest.
func (s *Webhooks) recordUpdate(ctx context.Context, by domain.AuditActor, before, after domain.Webhook) error {
	return recordWebhookUpdate(ctx, s.d.Audit, by, before, after)
}

func recordWebhookUpdate(ctx context.Context, log auditLog, by domain.AuditActor, before, after domain.Webhook) error {
	records := domain.ChangesWebhookUpdate(before, after)
	for _, action := range []domain.AuditAction{domain.AuditWebhookDisabled, domain.AuditWebhookEnabled, domain.AuditWebhookUpdated} {
		if changes, ok := records[action]; ok {
			if err := log.record(ctx, after.WorkspaceID, action, by, webhookTarget(after.ID), changes); err != nil {
				return err
			}
		}
	}
	return nil
}

// failIfDeactivating fails the pending deliveries of a webhook that patch
// turns off, before the webhook's row is locked: recording attempts locks
// deliveries and then their webhook (its failure span), so every
// transaction that takes both takes them in that order, or the two could
// wait for each other.
func (s *Webhooks) failIfDeactivating(ctx context.Context, workspaceID, id string, patch domain.WebhookFields) error {
	if on, ok := patch.Active.Get(); !ok || on {
		return nil
	}
	w, err := s.d.Webhooks.FindWebhookByID(ctx, workspaceID, id)
	if err != nil || !w.Active {
		return err
	}
	_, err = s.d.Deliveries.FailPendingDeliveries(ctx, workspaceID, id, "The webhook was deactivated.")
	return err
}

// Delete removes a webhook and its deliveries. Attempts already in flight
// finish; their outcome is dropped.
func (s *Webhooks) Delete(ctx context.Context, a domain.Actor, id string) error {
	if err := allowWebhooks(a, domain.ScopeWebhooksWrite); err != nil {
		return err
	}
	if !domain.IsID(id, domain.PrefixWebhook) {
		return domain.NotFound("webhook", id)
	}
	return s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		w, err := s.d.Webhooks.FindWebhookByID(ctx, a.WorkspaceID, id)
		if err != nil {
			return err
		}
		if err := s.d.Webhooks.DeleteWebhook(ctx, a.WorkspaceID, id); err != nil {
			return err
		}
		return s.d.Audit.record(ctx, a.WorkspaceID, domain.AuditWebhookDeleted, auditActor(ctx, a), webhookTarget(id), domain.ChangesWebhookDeleted(w))
	})
}

// RotateSecret gives a webhook a fresh signing secret, returned once. The
// next attempt of every delivery, retries included, is signed with it, and
// also with the replaced secret for previousExpiresIn seconds (absent: 0;
// validation_failed, param previous_secret_expires_in, outside 0-604800).
func (s *Webhooks) RotateSecret(ctx context.Context, a domain.Actor, id string, previousExpiresIn domain.Field[int64]) (domain.Webhook, error) {
	if err := allowWebhooks(a, domain.ScopeWebhooksWrite); err != nil {
		return domain.Webhook{}, err
	}
	grace, err := domain.PreviousSecretGrace("previous_secret_expires_in", previousExpiresIn)
	if err != nil {
		return domain.Webhook{}, err
	}
	if !domain.IsID(id, domain.PrefixWebhook) {
		return domain.Webhook{}, domain.NotFound("webhook", id)
	}
	var out domain.Webhook
	err = s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := claimKey(ctx, s.d.Answers); err != nil {
			return err
		}
		w, err := s.d.Webhooks.FindWebhookByIDForUpdate(ctx, a.WorkspaceID, id)
		if err != nil {
			return err
		}
		out = w.RotateSecret(s.d.Clock.Now(), grace)
		if err := s.d.Webhooks.UpdateWebhook(ctx, out); err != nil {
			return err
		}
		if err := commitAnswer(ctx, s.d.Answers, shownRotated(out)); err != nil {
			return err
		}
		return s.d.Audit.record(ctx, a.WorkspaceID, domain.AuditWebhookRotated, auditActor(ctx, a), webhookTarget(id), domain.ChangesWebhookRotated(w, out))
	})
	return shownRotated(out), err
}

// Deliveries pages through a webhook's deliveries, oldest first, filtered
// by status when set (validation_failed, param status, for an unknown one).
// resource_not_found for an absent or foreign webhook.
func (s *Webhooks) Deliveries(ctx context.Context, a domain.Actor, webhookID string, status *domain.DeliveryStatus, req domain.PageRequest) (domain.Page[domain.Delivery], error) {
	var none domain.Page[domain.Delivery]
	if err := allowWebhooks(a, domain.ScopeWebhooksRead); err != nil {
		return none, err
	}
	// A bad page size or filter is the request's fault whatever the webhook.
	if _, err := req.Size(); err != nil {
		return none, err
	}
	if status != nil {
		if err := status.Validate(); err != nil {
			return none, err
		}
	}
	if !domain.IsID(webhookID, domain.PrefixWebhook) {
		return none, domain.NotFound("webhook", webhookID)
	}
	k, err := req.Keyset(deliveryListScope(a.WorkspaceID, webhookID, status))
	if err != nil {
		return none, err
	}
	ds, err := s.d.Deliveries.FindDeliveries(ctx, ports.DeliveryFilter{
		WorkspaceID: a.WorkspaceID, WebhookID: webhookID, Status: status, After: k.After, Limit: k.Rows(),
	})
	if err != nil {
		return none, err
	}
	// Deliveries are scoped by workspace and webhook: any row proves the
	// webhook is visible, so only an empty page asks whether it exists.
	if len(ds) == 0 {
		if _, err := s.d.Webhooks.FindWebhookByID(ctx, a.WorkspaceID, webhookID); err != nil {
			return none, err
		}
	}
	return domain.NewPage(ds, k, domain.Delivery.Position), nil
}

// Redeliver sends a delivery again, whatever its status: back to pending,
// due now, its retry window restarted, with the same event and body; its
// attempts keep counting. The dispatcher is woken once it commits.
// resource_not_found unless the delivery is one of the webhook's, in the
// caller's workspace.
func (s *Webhooks) Redeliver(ctx context.Context, a domain.Actor, webhookID, deliveryID string) (domain.Delivery, error) {
	if err := allowWebhooks(a, domain.ScopeWebhooksWrite); err != nil {
		return domain.Delivery{}, err
	}
	if !domain.IsID(webhookID, domain.PrefixWebhook) {
		return domain.Delivery{}, domain.NotFound("webhook", webhookID)
	}
	if !domain.IsID(deliveryID, domain.PrefixDelivery) {
		return domain.Delivery{}, domain.NotFound("webhook delivery", deliveryID)
	}
	var out domain.Delivery
	err := s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := claimKey(ctx, s.d.Answers); err != nil {
			return err
		}
		d, err := s.d.Deliveries.FindDeliveryByID(ctx, a.WorkspaceID, webhookID, deliveryID)
		if err != nil {
			return err
		}
		out = d.Redeliver(s.d.Clock.Now())
		if err := s.d.Deliveries.RescheduleDelivery(ctx, out); err != nil {
			return err
		}
		afterCommit(ctx, s.d.Wake.Notify)
		return commitAnswer(ctx, s.d.Answers, out)
	})
	return out, err
}

// Ping queues one delivery of a webhook.ping event (data: the webhook) to
// the webhook alone, signed and retried like any other, and returns it. It
// works on an inactive webhook, to check a fix before enabling it again.
// The ping's event is not in the event log.
func (s *Webhooks) Ping(ctx context.Context, a domain.Actor, id string) (domain.Delivery, error) {
	if err := allowWebhooks(a, domain.ScopeWebhooksWrite); err != nil {
		return domain.Delivery{}, err
	}
	if !domain.IsID(id, domain.PrefixWebhook) {
		return domain.Delivery{}, domain.NotFound("webhook", id)
	}
	var d domain.Delivery
	err := s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := claimKey(ctx, s.d.Answers); err != nil {
			return err
		}
		w, err := s.d.Webhooks.FindWebhookByID(ctx, a.WorkspaceID, id)
		if err != nil {
			return err
		}
		e := newEvent(s.d.IDs, s.d.Clock, a.WorkspaceID, domain.EventWebhookPing, asEventData(w), nil)
		payload, err := s.d.Payloads.RenderEvent(e)
		if err != nil {
			return err
		}
		if _, err := s.d.EventLog.CreateEvents(ctx, []domain.Event{e}, [][]byte{payload}); err != nil {
			return err
		}
		d = domain.NewDelivery(s.d.IDs.NewID(domain.PrefixDelivery), w.ID, e)
		if err := s.d.Deliveries.CreateDeliveries(ctx, []domain.Delivery{d}); err != nil {
			return err
		}
		afterCommit(ctx, s.d.Wake.Notify)
		return commitAnswer(ctx, s.d.Answers, d)
	})
	return d, err
}

// shownRotated is a webhook as its rotation answers it: the new secret is
// shown once; the one it replaces never again.
func shownRotated(w domain.Webhook) domain.Webhook {
	w.PreviousSecret = ""
	return w
}

func withoutSecret(w domain.Webhook) domain.Webhook {
	w.Secret, w.PreviousSecret = "", ""
	return w
}

// asEventData is a webhook as an event's data shows it (webhook.disabled,
// webhook.ping): without its secrets, and with its custom headers' names
// but not their values, which may be a gateway's credentials and would
// otherwise reach every receiver of the event and the event log.
func asEventData(w domain.Webhook) domain.Webhook {
	w = withoutSecret(w)
	if len(w.Headers) > 0 {
		names := make(map[string]string, len(w.Headers))
		for name := range w.Headers {
			names[name] = domain.RedactedHeaderValue
		}
		w.Headers = names
	}
	return w
}
