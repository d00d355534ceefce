package paging_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mcplife/mcplife/store/internal/paging"
)

// rows are 1..n, read in pages of size from a key on.
func pages(n, size int, fetched *[]uint64) func(key uint64) ([]uint64, error) {
	return func(key uint64) ([]uint64, error) {
		*fetched = append(*fetched, key)
		var page []uint64
		for v := key; v <= uint64(n) && len(page) < size; v++ {
			page = append(page, v)
		}
		return page, nil
	}
}

func after(last uint64) (uint64, bool) { return last + 1, true }

func collect(t *testing.T, seq func(func(uint64, error) bool)) ([]uint64, error) {
	t.Helper()
	var got []uint64
	for v, err := range seq {
		if err != nil {
			return got, err
		}
		got = append(got, v)
	}
	return got, nil
}

func TestReadPages(t *testing.T) {
	for _, tc := range []struct {
		n, size int
		first   uint64
		want    []uint64
		fetches []uint64
	}{
		{n: 7, size: 3, first: 1, want: []uint64{1, 2, 3, 4, 5, 6, 7}, fetches: []uint64{1, 4, 7}},
		{n: 6, size: 3, first: 1, want: []uint64{1, 2, 3, 4, 5, 6}, fetches: []uint64{1, 4, 7}}, // a full last page needs one more read
		{n: 6, size: 3, first: 5, want: []uint64{5, 6}, fetches: []uint64{5}},
		{n: 0, size: 3, first: 1, want: nil, fetches: []uint64{1}},
	} {
		var fetched []uint64
		got, err := collect(t, paging.Read(t.Context(), "read", tc.size, tc.first, pages(tc.n, tc.size, &fetched), after))
		if err != nil || !slices.Equal(got, tc.want) || !slices.Equal(fetched, tc.fetches) {
			t.Errorf("n=%d size=%d from %d: got %v (%v) after fetching %v; want %v after %v", tc.n, tc.size, tc.first, got, err, fetched, tc.want, tc.fetches)
		}
	}
}

func TestReadStopsWhenNextSaysSo(t *testing.T) {
	var fetched []uint64
	upTo4 := func(last uint64) (uint64, bool) { return last + 1, last+1 <= 4 }
	got, err := collect(t, paging.Read(t.Context(), "read", 2, 1, pages(10, 2, &fetched), upTo4))
	if err != nil || !slices.Equal(got, []uint64{1, 2, 3, 4}) || len(fetched) != 2 {
		t.Errorf("got %v (%v) after fetching %v", got, err, fetched)
	}
}

func TestReadErrors(t *testing.T) {
	boom := errors.New("boom")
	got, err := collect(t, paging.Read(t.Context(), "read", 2, 1, func(uint64) ([]uint64, error) { return nil, boom }, after))
	if !errors.Is(err, boom) || got != nil {
		t.Errorf("fetch error: got %v, %v", got, err)
	}

	// A context that ends between items ends the read with its error.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var fetched []uint64
	var seen []uint64
	for v, err := range paging.Read(ctx, "sqlite: read all", 3, 1, pages(9, 3, &fetched), after) {
		if err != nil {
			if !errors.Is(err, context.Canceled) || err.Error() != "sqlite: read all: context canceled" {
				t.Errorf("error %v", err)
			}
			break
		}
		seen = append(seen, v)
		if v == 2 {
			cancel()
		}
	}
	if !slices.Equal(seen, []uint64{1, 2}) || len(fetched) != 1 {
		t.Errorf("saw %v after fetching %v, want 1 2 from one page", seen, fetched)
	}

	// A consumer that stops is not asked again.
	n := 0
	for range paging.Read(t.Context(), "read", 3, 1, pages(9, 3, &fetched), after) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("yielded %d after the consumer stopped", n)
	}
}
