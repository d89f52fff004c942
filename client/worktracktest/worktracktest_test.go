package worktracktest_test

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/client/worktracktest"
)

// requireImage skips the test unless Docker holds the Worktrack image and
// the PostgreSQL image (no registry is assumed): WORKTRACK_REQUIRE_DOCKER=1
// (CI, after make image) makes their absence a failure instead.
func requireImage(t *testing.T) {
	t.Helper()
	for _, image := range []string{
		cmp.Or(os.Getenv("WORKTRACK_IMAGE"), worktracktest.DefaultImage),
		cmp.Or(os.Getenv("WORKTRACK_POSTGRES_IMAGE"), worktracktest.DefaultPostgresImage),
	} {
		if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
			msg := "no Docker engine, or no image " + image + " (make image builds worktrack:dev; make test-client-containers runs this test): " + err.Error()
			if os.Getenv("WORKTRACK_REQUIRE_DOCKER") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// Run starts Worktrack and PostgreSQL, and the client drives them: the
// admin key works, a create and a bulk create land in PostgreSQL and are
// listed across pages, and an error comes back typed. Terminate removes
// everything.
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
	if !strings.HasPrefix(wt.URL, "http://") || !strings.HasPrefix(wt.AdminKey, "wtk_") {
		t.Fatalf("URL %q, admin key %q", wt.URL, wt.AdminKey)
	}
	c := wt.Client()
	me, err := c.Users.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(me.Email) != "ci@example.com" || me.Role != client.UserRoleAdmin {
		t.Fatalf("me %+v", me)
	}
	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Containers", Key: "CTR"})
	if err != nil {
		t.Fatal(err)
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
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict {
		t.Fatalf("a second project with the key: %v", err)
	}
	state, err := wt.Postgres.State(ctx)
	if err != nil || !state.Running {
		t.Fatalf("PostgreSQL's container: %+v %v", state, err)
	}
}

// The program in tools/downstream, a module of its own that requires this
// one through a replace directive, builds against the client and works
// against a running Worktrack: the containers Run starts.
func TestDownstreamProgram(t *testing.T) {
	requireImage(t)
	ctx := context.Background()
	wt, err := worktracktest.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = wt.Terminate(context.Background()) }()
	dir, err := filepath.Abs(filepath.Join("..", "..", "tools", "downstream"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WORKTRACK_URL="+wt.URL, "WORKTRACK_KEY="+wt.AdminKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tools/downstream: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "downstream: ok") {
		t.Fatalf("tools/downstream said:\n%s", out)
	}
}
