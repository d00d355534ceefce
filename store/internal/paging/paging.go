// Package paging reads a durable store's rows in pages, so that an
// iteration holds a connection only while it reads one page, whatever the
// consumer does between items. Both the SQLite and the PostgreSQL store
// read their events and streams through it.
package paging

import (
	"context"
	"fmt"
	"iter"
)

// Read yields the items of successive pages. fetch(key) returns the page
// that starts at key, at most size items; next(last) returns the key of
// the page after one that ended with last, and false when no page can
// follow. Reading starts at first and ends after a page shorter than size,
// when next says so, when the consumer stops, or with an error: fetch's,
// or the context's (wrapped as "what: err") when ctx ends between items.
func Read[T any](ctx context.Context, what string, size int, first uint64,
	fetch func(key uint64) ([]T, error), next func(last T) (uint64, bool)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		for key := first; ; {
			page, err := fetch(key)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, item := range page {
				if err := ctx.Err(); err != nil {
					yield(zero, fmt.Errorf("%s: %w", what, err))
					return
				}
				if !yield(item, nil) {
					return
				}
			}
			if len(page) < size {
				return
			}
			var ok bool
			if key, ok = next(page[len(page)-1]); !ok {
				return
			}
		}
	}
}
