package rest_test

import (
	"testing"

	"github.com/worktrack/worktrack/adapters/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
