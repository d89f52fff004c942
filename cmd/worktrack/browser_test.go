package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// browser is a headless Debian Chromium whose network is limited to one
// server: every request to another host is failed and recorded.
type browser struct {
	ctx     context.Context
	mu      sync.Mutex
	foreign []string
}

// openBrowser starts Chromium for t, allowing requests to base's host only.
// Without /usr/bin/chromium the test is skipped, unless
// WORKTRACK_REQUIRE_CHROMIUM=1 (CI).
func openBrowser(t *testing.T, base string) *browser {
	t.Helper()
	const bin = "/usr/bin/chromium"
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv("WORKTRACK_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("%s is missing (Debian's chromium package): %v", bin, err)
		}
		t.Skipf("%s is missing. To run these tests: apt-get install chromium. Skipping; WORKTRACK_REQUIRE_CHROMIUM=1 makes this a failure.", bin)
	}
	server, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1400, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })

	b := &browser{ctx: ctx}
	err = chromedp.Listen(ctx, func(ev any) {
		paused, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		// Commands may not run inside the listener: answer from a goroutine.
		go func() {
			u, err := url.Parse(paused.Request.URL)
			if err != nil || u.Host != server.Host {
				b.mu.Lock()
				b.foreign = append(b.foreign, paused.Request.URL)
				b.mu.Unlock()
				_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: paused.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
				return
			}
			_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: paused.RequestID})
		}()
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// noForeignRequests fails t if the page asked for anything off the server.
func (b *browser) noForeignRequests(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.foreign) > 0 {
		t.Fatalf("the page requested other hosts (blocked): %v", b.foreign)
	}
}

// screenshot keeps a PNG of the page as a test artifact: in docs/screenshots
// with WORKTRACK_UPDATE_SCREENSHOTS=1, else in the test's temporary directory.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot()) // the viewport, 1400x900
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := t.TempDir()
	if os.Getenv("WORKTRACK_UPDATE_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "..", "docs", "screenshots")
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// waitFor polls a JavaScript expression until it is true.
func (b *browser) waitFor(t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.screenshot(t, "failed.png")
			html, _ := chromedp.Run(b.ctx, chromedp.OuterHTML("body"))
			t.Fatalf("waiting for %s: not seen within 60s; page:\n%.2000s", what, html)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// GraphiQL works with the network limited to the server: the page loads,
// runs { me { email } } with a key from its Headers pane, shows the answer,
// and keeps the key out of the browser's storage.
func TestGraphiQLWorksOfflineAndForgetsTheKey(t *testing.T) {
	p := startServe(t, t.TempDir())
	key := secretRe.FindString(p.Stderr.String())
	b := openBrowser(t, p.Base)

	if err := chromedp.Do(b.ctx, chromedp.Navigate(p.Base+"/graphql")); err != nil {
		t.Fatal(err)
	}
	// Two CodeMirror editors come up: the query and the headers.
	b.waitFor(t, "the GraphiQL editors", `document.querySelectorAll(".CodeMirror").length >= 3`)
	// As a person would: select each editor's text and type over it.
	typeInto := func(what, pick, text string) {
		t.Helper()
		focus := `(() => {
		  const cm = [...document.querySelectorAll(".CodeMirror")].map(e => e.CodeMirror).find(` + pick + `);
		  if (!cm) return false;
		  cm.focus();
		  cm.execCommand("selectAll");
		  return true;
		})()`
		b.waitFor(t, "the "+what+" editor", focus)
		if err := chromedp.Do(b.ctx, chromedp.KeyEvent(text)); err != nil {
			t.Fatal(err)
		}
	}
	typeInto("headers", `cm => cm.getWrapperElement().closest(".graphiql-editor-tool") && cm.getValue().includes('"Authorization"')`, `{"Authorization": "Bearer `+key+`"}`)
	typeInto("query", `cm => cm.getWrapperElement().closest(".graphiql-query-editor")`, "{ me { email } }")
	if err := chromedp.Do(b.ctx, chromedp.Click(".graphiql-execute-button")); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the answer in the result pane",
		`(document.querySelector(".result-window")?.innerText || "").includes("admin@example.com")`)
	b.screenshot(t, "graphiql.png")

	stored, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`JSON.stringify(Object.assign({}, localStorage, sessionStorage))`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, key[4:]) {
		t.Fatalf("the API key was stored in the browser: %s", stored)
	}
	if !strings.Contains(stored, "me") {
		t.Fatalf("nothing of the session was stored, so the check above proves nothing: %s", stored)
	}
	b.noForeignRequests(t)
	p.Stop(t)
}

// GET /docs renders the REST reference from /v1/openapi.json with the Redoc
// bundle the binary serves, with the network limited to the server.
func TestReferenceRendersOffline(t *testing.T) {
	p := startServe(t, t.TempDir())
	b := openBrowser(t, p.Base)
	if err := chromedp.Do(b.ctx, chromedp.Navigate(p.Base+"/docs")); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the rendered reference",
		`document.body.innerText.includes("Worktrack REST API") && document.body.innerText.includes("Create a task")`)
	b.screenshot(t, "reference.png")
	b.noForeignRequests(t)
	p.Stop(t)
}
