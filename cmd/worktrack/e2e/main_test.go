// Package e2e runs the worktrack binary itself against PostgreSQL: tests
// that kill and restart server processes, which the in-process tests of the
// adapters cannot do.
package e2e

import (
	"os"
	"sync"
	"testing"

	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

// binary is the worktrack binary, built once for every test of the package
// by the first that needs it, into a directory removed when they are done.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	storetest.Main(m, func() {
		if binary.dir != "" {
			_ = os.RemoveAll(binary.dir)
		}
	})
}

// buildBinary returns the path of the worktrack binary.
func buildBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "worktrack-e2e-"); binary.err == nil {
			binary.path, binary.err = proctest.Build(binary.dir)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}
