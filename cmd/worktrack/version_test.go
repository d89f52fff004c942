package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func runLine(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// The values make build stamps (-X main.version, -X main.commit) are what
// `version` and `--version` print.
func TestVersionPrintsTheStampedBuild(t *testing.T) {
	oldVersion, oldCommit := version, commit
	version, commit = "v1.2.3-test", "0123456789abcdef"
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })

	out, errOut, code := runLine(t, "version")
	if code != 0 {
		t.Fatalf("version: exit %d: %s", code, errOut)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("version printed no JSON object: %v\n%s", err, out)
	}
	want := map[string]string{"version": "v1.2.3-test", "commit": "0123456789abcdef", "go": runtime.Version()}
	if len(got) != len(want) {
		t.Fatalf("version: %v, want exactly %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("version: %s = %q, want %q", k, got[k], v)
		}
	}

	out, _, code = runLine(t, "--version")
	if want := "worktrack v1.2.3-test (commit 0123456789abcdef, " + runtime.Version() + ")\n"; code != 0 || out != want {
		t.Fatalf("--version: exit %d, %q; want %q", code, out, want)
	}
}

// An unstamped binary (go run, go install) still says what it is.
func TestVersionWithoutStamp(t *testing.T) {
	oldVersion, oldCommit := version, commit
	version, commit = "", ""
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })
	b := currentBuild()
	if b.Version == "" || b.Commit == "" || b.Go != runtime.Version() {
		t.Fatalf("unstamped build: %+v", b)
	}
}

// A mistyped sub-command is an error: exit 1 with a suggestion, nothing on
// standard output.
func TestMistypedCommandFails(t *testing.T) {
	out, errOut, code := runLine(t, "serv")
	if code != 1 || out != "" || !strings.Contains(errOut, `unknown command "serv"`) || !strings.Contains(errOut, "serve") {
		t.Fatalf("worktrack serv: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// `serve --help` lists every variable the configuration reads.
func TestServeHelpListsEveryVariable(t *testing.T) {
	src, err := os.ReadFile("config.go")
	if err != nil {
		t.Fatal(err)
	}
	// The names LoadConfig reads, as string literals in its calls.
	read := regexp.MustCompile(`e\.[a-zA-Z]+\("([A-Z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(read) < 15 {
		t.Fatalf("found only %d variables read in config.go; the pattern is out of date", len(read))
	}
	out, _, code := runLine(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d", code)
	}
	for _, m := range read {
		name := m[1]
		if name == "WORKTRACK_TLS_KEY" {
			name = "_TLS_KEY" // listed beside WORKTRACK_TLS_CERT
		}
		if !strings.Contains(out, name) {
			t.Errorf("serve --help does not list %s:\n%s", m[1], out)
		}
	}
}
