package main

import (
	"bytes"
	"context"
	"encoding/json"
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
