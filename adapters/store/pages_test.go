package store_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/core/domain"
)

func itoa(i int) string { return strconv.Itoa(i) }

func compareStrings(a, b string) int { return strings.Compare(a, b) }

// sortByPosition sorts items as every list is ordered: created_at, then id
// compared byte by byte.
func sortByPosition[T any](items []T, pos func(T) domain.Position) {
	slices.SortFunc(items, func(a, b T) int {
		pa, pb := pos(a), pos(b)
		if c := pa.At.Compare(pb.At); c != 0 {
			return c
		}
		return strings.Compare(pa.ID, pb.ID)
	})
}

// collectPages walks a list the way the services do (asking for one row
// more than a page, continuing after the page's last row) and returns every
// row seen, checking that each page is in order.
func collectPages[T any](t *testing.T, size int, pos func(T) domain.Position, fetch func(after *domain.Position, limit int) ([]T, error)) []T {
	t.Helper()
	var all []T
	var after *domain.Position
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("listing does not end")
		}
		rows, err := fetch(after, size+1)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(rows) > size+1 {
			t.Fatalf("page %d: %d rows, asked for at most %d", pages, len(rows), size+1)
		}
		more := len(rows) > size
		if more {
			rows = rows[:size]
		}
		all = append(all, rows...)
		if !more {
			return all
		}
		p := pos(rows[len(rows)-1])
		after = &p
	}
}
