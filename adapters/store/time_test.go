package store_test

import (
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
)

func TestTimeColumn(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.FixedZone("CET", 3600))
	v, err := store.Time(at).Value()
	if err != nil || v != "2025-01-02T02:04:05.000006Z" {
		t.Fatalf("Value = %v, %v", v, err)
	}
	// Whole seconds keep their zeros, so the text stays fixed-width.
	v, _ = store.Time(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)).Value()
	if v != "2025-01-02T03:04:05.000000Z" {
		t.Fatalf("Value = %v", v)
	}
	for _, src := range []any{"2025-01-02T02:04:05.000006Z", []byte("2025-01-02T02:04:05.000006Z"), at} {
		var got store.Time
		if err := got.Scan(src); err != nil {
			t.Fatalf("Scan(%T): %v", src, err)
		}
		if tt := time.Time(got); !tt.Equal(at) || tt.Location() != time.UTC {
			t.Fatalf("Scan(%T) = %v", src, tt)
		}
	}
	var bad store.Time
	if err := bad.Scan(nil); err == nil {
		t.Fatal("NULL scanned into a non-null time")
	}
	if err := bad.Scan("yesterday"); err == nil {
		t.Fatal("bad text scanned")
	}

	var n store.NullTime
	if err := n.Scan(nil); err != nil || n.Valid || n.Ptr() != nil {
		t.Fatalf("NullTime.Scan(nil) = %+v, %v", n, err)
	}
	if v, err := n.Value(); v != nil || err != nil {
		t.Fatalf("NullTime{}.Value = %v, %v", v, err)
	}
	if err := n.Scan("2025-01-02T02:04:05.000006Z"); err != nil || !n.Valid || !n.Ptr().Equal(at) {
		t.Fatalf("NullTime.Scan = %+v, %v", n, err)
	}
	if v, _ := store.NullTimeOf(&at).Value(); v != "2025-01-02T02:04:05.000006Z" {
		t.Fatalf("NullTimeOf.Value = %v", v)
	}
}
