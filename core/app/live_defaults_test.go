package app

import (
	"testing"
	"time"
)

// The live feed's documented defaults (schema.graphql, docs/api.md): the
// API tests run with smaller limits, so that a subscriber falls behind in
// a hundred events rather than a thousand; this holds the defaults.
func TestLiveOptionsDefaults(t *testing.T) {
	var o LiveOptions
	o.defaults()
	if o.MaxPerKey != 20 || o.MaxBehind != 1000 || o.Window != 4096 || o.Poll != time.Second || o.Pause != 10*time.Millisecond {
		t.Fatalf("defaults: %+v", o)
	}
	set := LiveOptions{MaxPerKey: 3, MaxBehind: 50, Window: 64, Poll: time.Minute, Pause: time.Millisecond}
	o = set
	o.defaults()
	if o.MaxPerKey != 3 || o.MaxBehind != 50 || o.Window != 64 || o.Poll != time.Minute || o.Pause != time.Millisecond {
		t.Fatalf("given options were replaced: %+v", o)
	}
}
