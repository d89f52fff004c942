package app

import (
	"context"
	"fmt"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// outbox is the transactional outbox: the EventRecorder that writes an
// event, and one delivery per active webhook subscribed to its type, in the
// transaction of the change itself. A committed change therefore always has
// its deliveries and a rolled-back one never has; the dispatcher sends them
// afterwards, at least once.
type outbox struct {
	ids        ports.IDGenerator
	webhooks   ports.WebhookStore
	events     ports.EventStore
	deliveries ports.DeliveryStore
	payloads   ports.PayloadRenderer
	wake       *Signal
	logged     *Signal // wakes the live feed after every commit of events
}

var _ ports.EventRecorder = (*outbox)(nil)

// RecordEvent renders the payload once (every attempt and redelivery sends
// these exact bytes), stores the event and fans it out. The local
// dispatcher is woken after the transaction commits; dispatchers of other
// processes are woken by the store, where the database can.
func (o *outbox) RecordEvent(ctx context.Context, e domain.Event) error {
	payload, err := o.payloads.RenderEvent(e)
	if err != nil {
		return fmt.Errorf("outbox: render %s: %w", e.Type, err)
	}
	hooks, err := o.webhooks.FindSubscribedWebhooks(ctx, e.WorkspaceID, e.Type)
	if err != nil {
		return err
	}
	if err := o.events.CreateEvent(ctx, e, payload); err != nil {
		return err
	}
	afterCommit(ctx, o.logged.Notify)
	if len(hooks) == 0 {
		return nil
	}
	ds := make([]domain.Delivery, 0, len(hooks))
	for _, w := range hooks {
		ds = append(ds, domain.NewDelivery(o.ids.NewID(domain.PrefixDelivery), w, e))
	}
	if err := o.deliveries.CreateDeliveries(ctx, ds); err != nil {
		return err
	}
	afterCommit(ctx, o.wake.Notify)
	return nil
}
