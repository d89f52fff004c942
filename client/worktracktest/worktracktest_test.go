package worktracktest_test

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/client/worktracktest"
)

// requireImage skips the test unless Docker holds the Worktrack image and a
// PostgreSQL image Run starts by itself (no registry is assumed):
// WORKTRACK_REQUIRE_DOCKER=1 (CI, after make image and make test-image)
// makes their absence a failure instead.
func requireImage(t *testing.T) {
	t.Helper()
	missing := ""
	if !present(cmp.Or(os.Getenv("WORKTRACK_IMAGE"), worktracktest.DefaultImage)) {
		missing = cmp.Or(os.Getenv("WORKTRACK_IMAGE"), worktracktest.DefaultImage) + " (make image builds it)"
	} else if !present(worktracktest.DefaultPostgresImage) && !present(worktracktest.OfflinePostgresImage) {
		missing = worktracktest.DefaultPostgresImage + " or " + worktracktest.OfflinePostgresImage + " (make test-image builds it)"
	}
	if missing == "" {
		return
	}
	msg := "no Docker engine, or no image " + missing + "; make test-client-containers runs this test"
	if os.Getenv("WORKTRACK_REQUIRE_DOCKER") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func present(image string) bool {
	return exec.Command("docker", "image", "inspect", image).Run() == nil
}

// clean is the environment of a user who configured nothing: no
// TESTCONTAINERS_* or WORKTRACK_* variable (Run must find its way alone).
func clean() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TESTCONTAINERS_") && !strings.HasPrefix(kv, "WORKTRACK_") && !strings.HasPrefix(kv, "GOWORK=") && !strings.HasPrefix(kv, "GOFLAGS=") {
			env = append(env, kv)
		}
	}
	return append(env, "GOWORK=off")
}

// Run starts Worktrack and PostgreSQL, and the client drives them: the
// admin key works, a create and a bulk create land in PostgreSQL and are
// listed across pages, an error comes back typed, a webhook reaches an
// endpoint of ServeWebhooks, and every port is published on 127.0.0.1
// only. Terminate removes everything.
func TestRun(t *testing.T) {
	requireImage(t)
	ctx := context.Background()
	wt, err := worktracktest.Run(ctx, worktracktest.WithAdminEmail("ci@example.com"),
		worktracktest.WithEnv(map[string]string{"WORKTRACK_SECRETS_KEY": "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := wt.Terminate(context.Background()); err != nil {
			t.Errorf("terminate: %v", err)
		}
	}()
	if !strings.HasPrefix(wt.URL, "http://127.0.0.1:") || !strings.HasPrefix(wt.AdminKey, "wtk_") {
		t.Fatalf("URL %q, admin key %q", wt.URL, wt.AdminKey)
	}
	for _, id := range []string{wt.GetContainerID(), wt.Postgres.GetContainerID()} {
		out, err := exec.Command("docker", "inspect", "-f", `{{range $p, $b := .HostConfig.PortBindings}}{{range $b}}{{.HostIP}} {{end}}{{end}}|{{index .Config.Labels "`+worktracktest.Label+`"}}`, id).Output()
		if err != nil {
			t.Fatal(err)
		}
		bindings, label, _ := strings.Cut(strings.TrimSpace(string(out)), "|")
		if strings.TrimSpace(bindings) != "127.0.0.1" || label != "true" {
			t.Fatalf("container %s: published on %q, label %q; want 127.0.0.1 only, labelled", id, bindings, label)
		}
	}
	c := wt.Client()
	me, err := c.Users.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if me.Email != "ci@example.com" || me.Role != client.UserRoleAdmin {
		t.Fatalf("me %+v", me)
	}

	got := make(chan *client.Event, 4)
	var secret string
	ready := make(chan struct{})
	url, err := wt.ServeWebhooks(ctx, "/hook", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready
		body, _ := io.ReadAll(r.Body)
		e, err := client.VerifyWebhook(body, r.Header, secret)
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		got <- e
		w.WriteHeader(http.StatusNoContent)
	}))
	if err != nil {
		t.Fatal(err)
	}
	hook, err := c.Webhooks.Create(ctx, client.WebhookCreate{URL: url, Events: []client.EventType{client.EventTypeProjectCreated}})
	if err != nil {
		t.Fatal(err)
	}
	secret = hook.Secret
	close(ready)

	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Containers", Key: "CTR"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		if d, err := e.Project(); err != nil || d.ID != p.ID {
			t.Fatalf("delivered %+v (%v), want project %s", d, err, p.ID)
		}
	case <-time.After(time.Minute):
		t.Fatal("no delivery reached the test's endpoint")
	}

	items := make([]client.TaskCreate, 120)
	for i := range items {
		items[i].Title = "Imported " + string(rune('A'+i%26))
	}
	if _, err := c.Tasks.CreateMany(ctx, p.ID, items); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range c.Tasks.List(ctx, client.TaskListParams{ListParams: client.ListParams{PageSize: 50}, ProjectIDs: []string{p.ID}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 120 {
		t.Fatalf("listed %d tasks, want 120", n)
	}
	_, err = c.Projects.Create(ctx, client.ProjectCreate{Name: "Again", Key: "CTR"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict || apiErr.Code != client.CodeResourceAlreadyExists {
		t.Fatalf("a second project with the key: %v", err)
	}
	state, err := wt.Postgres.State(ctx)
	if err != nil || !state.Running {
		t.Fatalf("PostgreSQL's container: %+v %v", state, err)
	}
}

// A test binary killed before Terminate leaves its containers and network;
// Clean finds them by their labels and removes them, and leaves those of a
// process still running.
func TestCleanRemovesWhatAKilledTestLeft(t *testing.T) {
	if os.Getenv("WORKTRACKTEST_HELPER") == "run-and-wait" {
		// The helper: start Worktrack, say so, and wait to be killed.
		wt, err := worktracktest.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("started " + wt.GetContainerID() + "\n")
		time.Sleep(10 * time.Minute)
		return
	}
	requireImage(t)
	helper := exec.Command(os.Args[0], "-test.run=^TestCleanRemovesWhatAKilledTestLeft$", "-test.v")
	helper.Env = append(clean(), "WORKTRACKTEST_HELPER=run-and-wait")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if id, ok := strings.CutPrefix(lines.Text(), "started "); ok {
				started <- id
			}
		}
		close(started)
	}()
	var id string
	select {
	case id = <-started:
	case <-time.After(3 * time.Minute):
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	if id == "" {
		t.Fatal("the helper process did not start Worktrack")
	}
	pid := strconv.Itoa(helper.Process.Pid)
	left := func(kind string) []string {
		t.Helper()
		out, err := exec.Command("docker", kind, "ls", "-aq", "--filter", "label="+worktracktest.LabelPID+"="+pid).Output()
		if kind == "network" {
			out, err = exec.Command("docker", kind, "ls", "-q", "--filter", "label="+worktracktest.LabelPID+"="+pid).Output()
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(out))
	}
	if cs, ns := left("container"), left("network"); len(cs) != 2 || len(ns) != 1 {
		t.Fatalf("the killed process left %d containers and %d networks, want 2 and 1", len(cs), len(ns))
	}

	// A Worktrack of a process that still runs (this one) is left alone.
	mine, err := worktracktest.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mine.Terminate(context.Background()) }()
	if err := worktracktest.Clean(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cs, ns := left("container"), left("network"); len(cs) != 0 || len(ns) != 0 {
		t.Fatalf("after Clean: %v and %v remain", cs, ns)
	}
	if state, err := mine.State(context.Background()); err != nil || !state.Running {
		t.Fatalf("Clean stopped a running test's Worktrack: %+v %v", state, err)
	}
}

// A downstream module outside this repository, with nothing but replace
// directives to the checkout (tools/downstream, copied out): its test runs
// worktracktest with no variable set (no registry here: Ryuk off, the
// offline PostgreSQL image and the host found alone), receives a webhook
// from the container, and its module graph holds the client's and
// worktracktest's modules, none of the server's.
func TestDownstreamModule(t *testing.T) {
	requireImage(t)
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum", "main.go", "downstream_test.go"} {
		b, err := os.ReadFile(filepath.Join(checkout, "tools", "downstream", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "go.mod" {
			b = []byte(strings.ReplaceAll(string(b), "=> ../../client", "=> "+filepath.Join(checkout, "client")))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = clean()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := gocmd("test", "-count=1", "-v", "./...")
	if !strings.Contains(out, "--- PASS: TestAgainstWorktrack") {
		t.Fatalf("the downstream test did not pass:\n%s", out)
	}
	modules := gocmd("list", "-m", "all")
	server := regexp.MustCompile(`(?m)^(github\.com/worktrack/worktrack |github\.com/gin-gonic/|gorm\.io/|github\.com/99designs/gqlgen|github\.com/vektah/gqlparser|gorm\.io/driver)`)
	if m := server.FindAllString(modules, -1); len(m) > 0 {
		t.Fatalf("the downstream module requires the server's modules %v:\n%s", m, modules)
	}
	t.Logf("the downstream module's graph: %d modules", strings.Count(modules, "\n"))
}
