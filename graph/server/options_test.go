package server

import (
	"testing"
	"time"
)

// Options left zero take the documented defaults; options given are kept.
func TestOptionsDefaults(t *testing.T) {
	var o Options
	o.defaults()
	if o.MaxComplexity != DefaultMaxComplexity || o.MaxDepth != DefaultMaxDepth || o.APQCacheSize != DefaultAPQCacheSize ||
		o.LoaderWait != DefaultLoaderWait || o.InitTimeout != DefaultInitTimeout || o.KeyCheckInterval != 2*time.Second || o.WriteTimeout != 10*time.Second ||
		!o.budget.set() || o.Logger == nil {
		t.Fatalf("defaults: %+v", o)
	}
	o = Options{KeyCheckInterval: 50 * time.Millisecond, InitTimeout: time.Second}
	o.defaults()
	if o.KeyCheckInterval != 50*time.Millisecond || o.InitTimeout != time.Second {
		t.Fatalf("given options were replaced: %+v", o)
	}
}
