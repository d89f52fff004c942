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
	events     ports.EventStore
	deliveries ports.DeliveryStore
	payloads   ports.PayloadRenderer
	wake       *Signal
	logged     *Signal // wakes the live feed after every commit of events
}

var _ ports.EventRecorder = (*outbox)(nil)

// RecordEvent renders each payload once (every attempt and redelivery sends
// these exact bytes), stores the events, which also reads the webhooks
// subscribed to each (ports.EventStore.CreateEvents), and fans them out:
// one insertion of their deliveries. The local dispatcher is woken after
// the transaction commits; dispatchers of other processes are woken by the
// store, where the database can.
func (o *outbox) RecordEvent(ctx context.Context, es ...domain.Event) error {
	if len(es) == 0 {
		return nil
	}
	payloads := make([][]byte, len(es))
	for i, e := range es {
		payload, err := o.payloads.RenderEvent(e)
		if err != nil {
			return fmt.Errorf("outbox: render %s: %w", e.Type, err)
		}
		payloads[i] = payload
	}
	subscribers, err := o.events.CreateEvents(ctx, es, payloads)
	if err != nil {
		return err
	}
	afterCommit(ctx, o.logged.Notify)
	fanout := 0
	for _, ids := range subscribers {
		fanout += len(ids)
	}
	if fanout == 0 {
		return nil
	}
	ds := make([]domain.Delivery, 0, fanout)
	for i, e := range es {
		for _, id := range subscribers[i] {
			ds = append(ds, domain.NewDelivery(o.ids.NewID(domain.PrefixDelivery), id, e))
		}
	}
	if err := o.deliveries.CreateDeliveries(ctx, ds); err != nil {
		return err
	}
	afterCommit(ctx, o.wake.Notify)
	return nil
}

// RecordWith is RecordEvent for one event that the store writes together
// with its change (ports.TaskStore.CreateTaskLogged): the payload rendered
// once, delivery ids from the outbox's generator, and the same wakes after
// the commit.
func (o *outbox) RecordWith(ctx context.Context, e domain.Event, write func(context.Context, ports.Outboxed) (int, error)) error {
	payload, err := o.payloads.RenderEvent(e)
	if err != nil {
		return fmt.Errorf("outbox: render %s: %w", e.Type, err)
	}
	n, err := write(ctx, ports.Outboxed{Event: e, Payload: payload, NewDeliveryID: o.newDeliveryID})
	if err != nil {
		return err
	}
	afterCommit(ctx, o.logged.Notify)
	if n > 0 {
		afterCommit(ctx, o.wake.Notify)
	}
	return nil
}

func (o *outbox) newDeliveryID() string { return o.ids.NewID(domain.PrefixDelivery) }
