package storetest

import (
	"errors"
	"strings"
	"testing"
)

// A container that did not start is answered with the one command that
// makes the tests run on this machine.
func TestFixForNamesTheRealCause(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{"image postgres:16-alpine: testcontainers: Error response from daemon: pull access denied, repository does not exist", "make test-image"},
		{`Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host`, "make test-image"},
		{"create reaper: ryuk: pull testcontainers/ryuk", "TESTCONTAINERS_RYUK_DISABLED=true"},
		{"container is not ready: external check: dial 172.17.0.1:32768: connection refused", "TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1"},
		{"Cannot connect to the Docker daemon at unix:///var/run/docker.sock", "start a Docker engine"},
	} {
		if got := fixFor(errors.New(tc.err), fixPostgres); !strings.Contains(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant it to say %q", tc.err, got, tc.want)
		}
	}
}
