package client

import (
	"context"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// page is one page of a list, whatever its items.
type page[T any] struct {
	Data       []T `json:"data"`
	Pagination struct {
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
	} `json:"pagination"`
}

// list iterates over every item of the list at path, page after page
// (each page one request), until the last page, the caller stops, or an
// error, which is yielded once and ends the iteration.
func list[T any](ctx context.Context, c *Client, path string, query url.Values) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := maps.Clone(query)
		if q == nil {
			q = url.Values{}
		}
		for {
			var p page[T]
			if err := c.do(ctx, http.MethodGet, path, q, nil, &p); err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range p.Data {
				if !yield(item, nil) {
					return
				}
			}
			if !p.Pagination.HasMore || p.Pagination.NextCursor == nil {
				return
			}
			// The next page is the cursor's alone: starting_after said
			// where the first began, and the API refuses both together.
			q.Del("starting_after")
			q.Set("cursor", *p.Pagination.NextCursor)
		}
	}
}

// query builds a list's query string, leaving out what is unset.
type query url.Values

func (q query) int(name string, v int) {
	if v > 0 {
		url.Values(q).Set(name, strconv.Itoa(v))
	}
}

func (q query) str(name, v string) {
	if v != "" {
		url.Values(q).Set(name, v)
	}
}

func (q query) time(name string, v *time.Time) {
	if v != nil {
		url.Values(q).Set(name, v.UTC().Format(time.RFC3339Nano))
	}
}

// joined sets a comma-separated list.
func joined[S ~string](q query, name string, vs []S) {
	if len(vs) == 0 {
		return
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = string(v)
	}
	url.Values(q).Set(name, strings.Join(parts, ","))
}

// ListParams are the parameters every list takes.
type ListParams struct {
	// PageSize is how many items each request fetches, 1-100 (the
	// server's default, 20, when 0). The iterator goes on to the next page
	// by itself; stop it to stop.
	PageSize int
}

func (p ListParams) query() query {
	q := query{}
	q.int("limit", p.PageSize)
	return q
}
