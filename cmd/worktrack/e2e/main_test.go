// Package e2e runs the worktrack binary itself against PostgreSQL: tests
// that kill and restart server processes, which the in-process tests of the
// adapters cannot do.
package e2e

import (
	"testing"

	"github.com/worktrack/worktrack/adapters/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
