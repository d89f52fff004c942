package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

var at = time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)

func TestRenderTaskUpdated(t *testing.T) {
	due := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	assignee := "usr_1"
	task := domain.Task{
		ID: "tsk_1", ProjectID: "prj_1", Title: "New <title>", Status: domain.StatusDone,
		AssigneeID: &assignee, CreatedAt: at, UpdatedAt: at.Add(time.Second),
	}
	e := domain.Event{
		ID: "evt_1", Type: domain.EventTaskUpdated, CreatedAt: at.Add(time.Second), Data: task,
		Previous: domain.Changes{
			{Field: "title", Old: "Old"}, {Field: "status", Old: domain.StatusOpen},
			{Field: "assignee_id", Old: (*string)(nil)}, {Field: "due_at", Old: &due},
		},
	}
	got, err := wire.Payloads{}.RenderEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"evt_1","object":"event","type":"task.updated","created_at":"2026-03-01T09:00:01.123456Z",` +
		`"data":{"id":"tsk_1","object":"task","project_id":"prj_1","title":"New <title>","status":"done","assignee_id":"usr_1","due_at":null,"created_at":"2026-03-01T09:00:00.123456Z","updated_at":"2026-03-01T09:00:01.123456Z"},` +
		`"previous_attributes":{"assignee_id":null,"due_at":"2026-04-01T08:00:00.000000Z","status":"open","title":"Old"}}`
	if string(got) != want {
		t.Fatalf("payload:\n got %s\nwant %s", got, want)
	}
	// data is the REST representation, byte for byte (neither escapes HTML).
	rest, _ := wire.Marshal(wire.FromTask(task))
	var parsed struct{ Data json.RawMessage }
	if err := json.Unmarshal(got, &parsed); err != nil || string(parsed.Data) != string(rest) {
		t.Fatalf("data differs from REST: %s vs %s", parsed.Data, rest)
	}
}

func TestRenderCreatedHasNoPreviousAttributes(t *testing.T) {
	p := domain.Project{ID: "prj_1", Name: "Apollo", Key: "APO", TaskCount: 2, StatusCounts: domain.StatusCounts{Open: 1, Done: 1}, CreatedAt: at, UpdatedAt: at}
	got, err := wire.Payloads{}.RenderEvent(domain.Event{ID: "evt_2", Type: domain.EventProjectCreated, CreatedAt: at, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"evt_2","object":"event","type":"project.created","created_at":"2026-03-01T09:00:00.123456Z",` +
		`"data":{"id":"prj_1","object":"project","name":"Apollo","key":"APO","task_count":2,"task_counts":{"open":1,"in_progress":0,"done":1,"archived":0},"created_at":"2026-03-01T09:00:00.123456Z","updated_at":"2026-03-01T09:00:00.123456Z"}}`
	if string(got) != want {
		t.Fatalf("payload:\n got %s\nwant %s", got, want)
	}
}

func TestRenderRefusesUnknownData(t *testing.T) {
	if _, err := (wire.Payloads{}).RenderEvent(domain.Event{Type: domain.EventTaskCreated, Data: 42}); err == nil {
		t.Fatal("rendered an event with data of no known kind")
	}
	task := domain.Task{ID: "tsk_1"}
	if _, err := (wire.Payloads{}).RenderEvent(domain.Event{Type: domain.EventTaskUpdated, Data: task, Previous: domain.Changes{{Field: "x", Old: struct{}{}}}}); err == nil {
		t.Fatal("rendered an old value of no known kind")
	}
}

func TestWebhookShapes(t *testing.T) {
	w := domain.Webhook{ID: "whk_1", URL: "https://x.test/h", Events: []domain.EventType{domain.EventTaskCreated}, Active: true, Secret: "whsec_s", CreatedAt: at, UpdatedAt: at}
	plain, _ := json.Marshal(wire.FromWebhook(w))
	if string(plain) != `{"id":"whk_1","object":"webhook","url":"https://x.test/h","events":["task.created"],"active":true,"headers":{},"disabled_reason":null,"disabled_at":null,"created_at":"2026-03-01T09:00:00.123456Z","updated_at":"2026-03-01T09:00:00.123456Z"}` {
		t.Fatalf("webhook: %s", plain)
	}
	withSecret, _ := json.Marshal(wire.FromWebhookWithSecret(w))
	if string(withSecret) != string(plain[:len(plain)-1])+`,"secret":"whsec_s"}` {
		t.Fatalf("webhook with secret: %s", withSecret)
	}
	d, _ := json.Marshal(wire.FromDelivery(domain.Delivery{ID: "whd_1", WebhookID: "whk_1", EventID: "evt_1", EventType: domain.EventTaskCreated, Status: domain.DeliveryPending, NextAttemptAt: &at, CreatedAt: at}))
	if string(d) != `{"id":"whd_1","object":"webhook_delivery","webhook_id":"whk_1","event_id":"evt_1","event_type":"task.created","status":"pending","attempts":0,"last_attempt_at":null,"last_status_code":null,"last_error":null,"next_attempt_at":"2026-03-01T09:00:00.123456Z","created_at":"2026-03-01T09:00:00.123456Z"}` {
		t.Fatalf("delivery: %s", d)
	}
}
