package wire

import (
	"fmt"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Webhook is the Webhook object; the secret is never part of it.
// disabled_reason and disabled_at are null while it is active; headers are
// the receiver's configuration, shown as given.
type Webhook struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	URL            string            `json:"url"`
	Events         []string          `json:"events"`
	Active         bool              `json:"active"`
	Headers        map[string]string `json:"headers"`
	DisabledReason *string           `json:"disabled_reason"`
	DisabledAt     *string           `json:"disabled_at"`
	CreatedAt      string            `json:"created_at"`
	UpdatedAt      string            `json:"updated_at"`
}

// FromWebhook renders a webhook without its secret.
func FromWebhook(w domain.Webhook) Webhook {
	evs := make([]string, len(w.Events))
	for i, e := range w.Events {
		evs[i] = string(e)
	}
	headers := w.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	out := Webhook{
		ID: w.ID, Object: "webhook", URL: w.URL, Events: evs, Active: w.Active, Headers: headers,
		DisabledAt: TimePtr(w.DisabledAt), CreatedAt: Time(w.CreatedAt), UpdatedAt: Time(w.UpdatedAt),
	}
	if w.DisabledReason != "" {
		r := string(w.DisabledReason)
		out.DisabledReason = &r
	}
	return out
}

// Webhook reads the Webhook object back (an event's data), without a
// secret: the webhook as the event shows it.
func (w Webhook) Webhook(workspaceID string) (domain.Webhook, error) {
	evs := make([]domain.EventType, len(w.Events))
	for i, e := range w.Events {
		evs[i] = domain.EventType(e)
	}
	out := domain.Webhook{ID: w.ID, WorkspaceID: workspaceID, URL: w.URL, Events: evs, Active: w.Active, Headers: w.Headers}
	if w.DisabledReason != nil {
		out.DisabledReason = domain.DisabledReason(*w.DisabledReason)
	}
	if w.DisabledAt != nil {
		at, err := parseTime("disabled_at", *w.DisabledAt)
		if err != nil {
			return domain.Webhook{}, err
		}
		out.DisabledAt = &at
	}
	var err error
	if out.CreatedAt, err = parseTime("created_at", w.CreatedAt); err != nil {
		return domain.Webhook{}, err
	}
	if out.UpdatedAt, err = parseTime("updated_at", w.UpdatedAt); err != nil {
		return domain.Webhook{}, err
	}
	return out, nil
}

// WebhookWithSecret is the Webhook object plus its signing secret: the
// answer to a create or a rotate_secret, and to nothing else.
type WebhookWithSecret struct {
	Webhook
	Secret string `json:"secret"`
}

// FromWebhookWithSecret renders a webhook with its secret.
func FromWebhookWithSecret(w domain.Webhook) WebhookWithSecret {
	return WebhookWithSecret{Webhook: FromWebhook(w), Secret: w.Secret}
}

// Delivery is the webhook_delivery object.
type Delivery struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	WebhookID      string  `json:"webhook_id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	LastAttemptAt  *string `json:"last_attempt_at"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	CreatedAt      string  `json:"created_at"`
}

// FromDelivery renders a delivery.
func FromDelivery(d domain.Delivery) Delivery {
	return Delivery{
		ID: d.ID, Object: "webhook_delivery", WebhookID: d.WebhookID, EventID: d.EventID,
		EventType: string(d.EventType), Status: string(d.Status), Attempts: d.Attempts,
		LastAttemptAt: TimePtr(d.LastAttemptAt), LastStatusCode: d.LastStatusCode, LastError: d.LastError,
		NextAttemptAt: TimePtr(d.NextAttemptAt), CreatedAt: Time(d.CreatedAt),
	}
}

// Event is the webhook payload of docs/api.md#webhooks. PreviousAttributes
// is present on *.updated events only.
type Event struct {
	ID                 string         `json:"id"`
	Object             string         `json:"object"`
	Type               string         `json:"type"`
	CreatedAt          string         `json:"created_at"`
	Data               any            `json:"data"`
	PreviousAttributes map[string]any `json:"previous_attributes,omitempty"`
}

// Payloads renders webhook payloads for the outbox.
type Payloads struct{}

var _ ports.PayloadRenderer = Payloads{}

// RenderEvent renders e as the bytes every delivery of it sends. Data is
// the resource in its REST representation; previous_attributes holds each
// changed field's old value in the same representation (a time as the wire
// time string, an absent value as null).
func (Payloads) RenderEvent(e domain.Event) ([]byte, error) {
	out := Event{ID: e.ID, Object: "event", Type: string(e.Type), CreatedAt: Time(e.CreatedAt)}
	switch v := e.Data.(type) {
	case domain.Task:
		out.Data = FromTask(v)
	case domain.Project:
		out.Data = FromProject(v)
	case domain.Webhook:
		out.Data = FromWebhook(v)
	default:
		return nil, fmt.Errorf("wire: no payload for %T data", e.Data)
	}
	if len(e.Previous) > 0 {
		out.PreviousAttributes = make(map[string]any, len(e.Previous))
		for _, c := range e.Previous {
			v, err := attribute(c.Old)
			if err != nil {
				return nil, fmt.Errorf("wire: previous %s: %w", c.Field, err)
			}
			out.PreviousAttributes[c.Field] = v
		}
	}
	return Marshal(out)
}

// attribute renders one old field value as the REST API renders the field.
func attribute(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string, bool, int:
		return x, nil
	case domain.Status:
		return string(x), nil
	case *string:
		if x == nil {
			return nil, nil
		}
		return *x, nil
	case time.Time:
		return Time(x), nil
	case *time.Time:
		if x == nil {
			return nil, nil
		}
		return Time(*x), nil
	}
	return nil, fmt.Errorf("no wire form for %T", v)
}
