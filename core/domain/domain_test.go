package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

func TestIDsAreRandomAndPrefixed(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := domain.NewID(domain.PrefixProject)
		if !domain.HasPrefix(id, "prj") || len(id) != 4+22 || !domain.IsBase62(id[4:]) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
	if domain.HasPrefix("prj_", "prj") || domain.HasPrefix("prjx_abc", "prj") || domain.HasPrefix("tsk_abc", "prj") {
		t.Fatal("HasPrefix accepts ids of another kind")
	}
}

func TestCursorRoundTripAndTampering(t *testing.T) {
	pos := domain.Position{At: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC), ID: "prj_abc"}
	c := domain.EncodeCursor("projects:wsp_1", pos)
	got, err := domain.DecodeCursor("cursor", "projects:wsp_1", c)
	if err != nil || !got.At.Equal(pos.At) || got.ID != pos.ID {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if _, err := domain.DecodeCursor("cursor", "projects:wsp_2", c); !domain.IsCode(err, domain.CodeValidationFailed) {
		t.Fatal("a cursor of another scope was accepted")
	}
	for i := range c {
		b := []byte(c)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		if _, err := domain.DecodeCursor("cursor", "projects:wsp_1", string(b)); err == nil {
			t.Fatalf("tampering with byte %d went unnoticed", i)
		}
	}
	if e, _ := domain.AsError(mustErr(domain.DecodeCursor("after", "x", "!!"))); e.Param != "after" {
		t.Fatalf("param: %v", e)
	}
}

func mustErr(_ domain.Position, err error) error { return err }

func TestRetrySchedule(t *testing.T) {
	p := domain.RetryPolicy{Base: 10 * time.Second, Max: 2 * time.Hour, Window: 24 * time.Hour}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second}
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w {
			t.Fatalf("retry %d: %v, want %v", i+1, got, w)
		}
	}
	if got := p.Backoff(30); got != 2*time.Hour {
		t.Fatalf("cap: %v", got)
	}
	p.Jitter = func(d time.Duration) time.Duration { return d / 2 }
	if got := p.Backoff(2); got != 10*time.Second {
		t.Fatalf("jitter not applied: %v", got)
	}
}

func TestDeliveryStateMachine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := domain.RetryPolicy{Base: time.Minute, Max: 10 * time.Minute, Window: time.Hour}
	d := domain.Delivery{Status: domain.DeliveryPending, WindowStart: start}

	o := d.RecordAttempt(domain.AttemptResult{StatusCode: 500}, start, p)
	if o.Delivery.Status != domain.DeliveryPending || o.Delivery.Attempts != 1 || !o.Delivery.NextAttemptAt.Equal(start.Add(time.Minute)) || *o.Delivery.LastStatusCode != 500 {
		t.Fatalf("500: %+v", o.Delivery)
	}
	o = o.Delivery.RecordAttempt(domain.AttemptResult{Err: "timeout"}, start.Add(time.Minute), p)
	if o.Delivery.LastStatusCode != nil || *o.Delivery.LastError != "timeout" || !o.Delivery.NextAttemptAt.Equal(start.Add(3*time.Minute)) {
		t.Fatalf("timeout: %+v", o.Delivery)
	}
	ok := o.Delivery.RecordAttempt(domain.AttemptResult{StatusCode: 204}, start.Add(3*time.Minute), p)
	if ok.Delivery.Status != domain.DeliverySucceeded || ok.Delivery.NextAttemptAt != nil || ok.Delivery.Attempts != 3 {
		t.Fatalf("204: %+v", ok.Delivery)
	}
	// Retry-After on 429/503 wins over the backoff, even beyond Max.
	ra := 30 * time.Minute
	o = d.RecordAttempt(domain.AttemptResult{StatusCode: 429, RetryAfter: ra}, start, p)
	if !o.Delivery.NextAttemptAt.Equal(start.Add(ra)) {
		t.Fatalf("retry-after: %v", o.Delivery.NextAttemptAt)
	}
	// ...but not on other statuses.
	o = d.RecordAttempt(domain.AttemptResult{StatusCode: 500, RetryAfter: ra}, start, p)
	if !o.Delivery.NextAttemptAt.Equal(start.Add(time.Minute)) {
		t.Fatalf("retry-after honoured on 500: %v", o.Delivery.NextAttemptAt)
	}
	// A Retry-After beyond the window fails the delivery.
	// A Retry-After shorter than the backoff does not shorten it.
	o = d.RecordAttempt(domain.AttemptResult{StatusCode: 503, RetryAfter: time.Second}, start, p)
	if !o.Delivery.NextAttemptAt.Equal(start.Add(time.Minute)) {
		t.Fatalf("short retry-after: %v", o.Delivery.NextAttemptAt)
	}
	if o = d.RecordAttempt(domain.AttemptResult{StatusCode: 503, RetryAfter: 2 * time.Hour}, start, p); o.Delivery.Status != domain.DeliveryFailed {
		t.Fatalf("late retry-after: %+v", o.Delivery)
	}
	// The window closes: no attempt is scheduled past it.
	if o = d.RecordAttempt(domain.AttemptResult{StatusCode: 500}, start.Add(59*time.Minute+30*time.Second), p); o.Delivery.Status != domain.DeliveryFailed {
		t.Fatalf("window: %+v", o.Delivery)
	}
	// 410 fails at once and deactivates the webhook.
	if o = d.RecordAttempt(domain.AttemptResult{StatusCode: 410}, start, p); o.Delivery.Status != domain.DeliveryFailed || !o.DeactivateWebhook {
		t.Fatalf("410: %+v", o)
	}
	// Redelivery restarts the window and keeps counting attempts.
	r := o.Delivery.Redeliver(start.Add(48 * time.Hour))
	if r.Status != domain.DeliveryPending || r.Attempts != 1 || !r.WindowStart.Equal(start.Add(48*time.Hour)) || !r.NextAttemptAt.Equal(r.WindowStart) {
		t.Fatalf("redeliver: %+v", r)
	}
	if r.WindowClosed(start.Add(49*time.Hour), p) || !r.WindowClosed(start.Add(49*time.Hour+time.Microsecond), p) {
		t.Fatal("the window of a redelivery is one Window from the redelivery")
	}
	// Fail ends a pending delivery without an attempt.
	f := r.Fail("webhook deactivated")
	if f.Status != domain.DeliveryFailed || f.NextAttemptAt != nil || *f.LastError != "webhook deactivated" || f.Attempts != 1 {
		t.Fatalf("fail: %+v", f)
	}
}

func TestEqualJitter(t *testing.T) {
	d := 10 * time.Second
	seen := map[time.Duration]bool{}
	for range 1000 {
		j := domain.EqualJitter(d)
		if j < d/2 || j > d {
			t.Fatalf("jitter %v outside [%v, %v]", j, d/2, d)
		}
		seen[j] = true
	}
	if len(seen) < 100 {
		t.Fatalf("jitter barely varies: %d distinct values in 1000", len(seen))
	}
	p := domain.RetryPolicy{Base: time.Second, Max: time.Minute, Window: time.Hour, Jitter: domain.EqualJitter}
	if b := p.Backoff(3); b < 2*time.Second || b > 4*time.Second {
		t.Fatalf("jittered third backoff %v outside [2s, 4s]", b)
	}
}

func TestNewDelivery(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC)
	w := domain.Webhook{ID: "whk_1", WorkspaceID: "wsp_1"}
	e := domain.Event{ID: "evt_1", WorkspaceID: "wsp_1", Type: domain.EventTaskCreated, CreatedAt: at}
	d := domain.NewDelivery("whd_1", w.ID, e)
	want := domain.Timestamp(at)
	if d.Status != domain.DeliveryPending || d.Attempts != 0 || d.WebhookID != "whk_1" || d.EventID != "evt_1" ||
		d.EventType != domain.EventTaskCreated || !d.WindowStart.Equal(want) || !d.NextAttemptAt.Equal(want) || !d.CreatedAt.Equal(want) {
		t.Fatalf("new delivery: %+v", d)
	}
}

func TestEventTypes(t *testing.T) {
	evs, err := domain.ParseEventTypes("events", []string{"task.created", "task.created", "project.updated"})
	if err != nil || len(evs) != 2 {
		t.Fatalf("duplicates collapse: %v %v", evs, err)
	}
	for _, bad := range [][]string{{}, {"task.moved"}, {"task.created", ""}} {
		if _, err := domain.ParseEventTypes("events", bad); !domain.IsCode(err, domain.CodeValidationFailed) {
			t.Fatalf("%v accepted", bad)
		}
	}
	six := []string{"task.created", "task.updated", "task.deleted", "project.created", "project.updated", "task.created"}
	if evs, err := domain.ParseEventTypes("events", six); err != nil || len(evs) != 5 {
		t.Fatalf("duplicates are counted after collapsing: %v", err)
	}
}

func TestWebhookURL(t *testing.T) {
	for _, good := range []string{"https://example.com/hook", "http://example.com:8080/x?y=1"} {
		if _, err := domain.ValidateWebhookURL(good); err != nil {
			t.Fatalf("%s: %v", good, err)
		}
	}
	for _, bad := range []string{"", "example.com", "ftp://example.com", "https://user:pw@example.com", "https:///path", "https://example.com/" + strings.Repeat("a", 2048)} {
		if _, err := domain.ValidateWebhookURL(bad); !domain.IsCode(err, domain.CodeValidationFailed) {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// Task creation applies every field rule itself, on the same unvalidated
// fields a patch takes, whichever API they came from.
func TestNewTaskRules(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ok := domain.Set("Write the spec")
	cases := []struct {
		name  string
		in    domain.TaskFields
		param string
	}{
		{"title absent", domain.TaskFields{}, "title"},
		{"title null", domain.TaskFields{Title: domain.Null[string]()}, "title"},
		{"title blank", domain.TaskFields{Title: domain.Set("  ")}, "title"},
		{"status null", domain.TaskFields{Title: ok, Status: domain.Null[domain.Status]()}, "status"},
		{"status unknown", domain.TaskFields{Title: ok, Status: domain.Set(domain.Status("later"))}, "status"},
		{"status archived", domain.TaskFields{Title: ok, Status: domain.Set(domain.StatusArchived)}, "status"},
		{"assignee of another kind", domain.TaskFields{Title: ok, AssigneeID: domain.Set("prj_1")}, "assignee_id"},
	}
	for _, c := range cases {
		_, err := domain.NewTask("tsk_1", "wsp_1", "prj_1", c.in, now)
		e, isDomain := domain.AsError(err)
		if !isDomain || e.Code != domain.CodeValidationFailed || e.Param != c.param {
			t.Fatalf("%s: %v, want validation_failed on %s", c.name, err, c.param)
		}
		if strings.HasPrefix(e.Message, c.param+" ") || !strings.HasSuffix(e.Message, ".") {
			t.Fatalf("%s: the message %q must read without its param, as a sentence", c.name, e.Message)
		}
	}
	task, err := domain.NewTask("tsk_1", "wsp_1", "prj_1", domain.TaskFields{Title: ok, AssigneeID: domain.Null[string](), DueAt: domain.Null[time.Time]()}, now)
	if err != nil || task.Status != domain.StatusOpen || task.AssigneeID != nil || task.DueAt != nil {
		t.Fatalf("absent status is open, null assignee and due_at are none: %+v %v", task, err)
	}
}

// The page size rule: the default when absent or null, 1..100 otherwise,
// reported on param limit.
func TestPageRequestSize(t *testing.T) {
	for _, c := range []struct {
		limit domain.Field[int]
		want  int
	}{{domain.Field[int]{}, domain.DefaultPageLimit}, {domain.Null[int](), domain.DefaultPageLimit}, {domain.Set(1), 1}, {domain.Set(100), 100}} {
		if n, err := (domain.PageRequest{Limit: c.limit}).Size(); err != nil || n != c.want {
			t.Fatalf("%+v: %d %v, want %d", c.limit, n, err, c.want)
		}
	}
	for _, bad := range []int{0, -1, 101} {
		_, err := domain.PageRequest{Limit: domain.Set(bad)}.Size()
		if e, ok := domain.AsError(err); !ok || e.Param != "limit" || e.Code != domain.CodeValidationFailed {
			t.Fatalf("limit %d: %v", bad, err)
		}
	}
}

// A page gives each item the cursor a page ending at that item would have
// as its next cursor, so per-item cursors need no scope from the edge.
func TestPageCursors(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	items := []domain.Project{{ID: "prj_a", CreatedAt: base}, {ID: "prj_b", CreatedAt: base.Add(time.Second)}, {ID: "prj_c", CreatedAt: base.Add(2 * time.Second)}}
	k, err := domain.PageRequest{Limit: domain.Set(2)}.Keyset("projects:wsp_1")
	if err != nil || k.Rows() != 3 {
		t.Fatalf("keyset: %+v %v", k, err)
	}
	p := domain.NewPage(items, k, domain.Project.Position)
	if !p.HasMore || len(p.Items) != 2 || p.Cursor(1) != p.NextCursor {
		t.Fatalf("page: %+v", p)
	}
	next, err := domain.PageRequest{Cursor: p.Cursor(0)}.Keyset("projects:wsp_1")
	if err != nil || next.After == nil || next.After.ID != "prj_a" {
		t.Fatalf("item cursor: %+v %v", next, err)
	}
	if _, err := (domain.PageRequest{Cursor: p.Cursor(0)}).Keyset("projects:wsp_2"); !domain.IsCode(err, domain.CodeValidationFailed) {
		t.Fatal("an item's cursor was accepted by another list")
	}
}
