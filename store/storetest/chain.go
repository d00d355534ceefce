package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/mcplife/mcplife/store"
)

// testChain appends from several goroutines at once, in single appends,
// multi-event appends, batches and appends that fail on a version
// conflict, then checks that the chain the store kept is the one computed
// over its log: every row's chain value follows from the row before it, the
// rows are the events ReadAll yields, and the head is the last row.
func testChain(t *testing.T, s store.Store, cr store.ChainReader) {
	ctx := testCtx(t)
	if h, err := cr.ChainHead(ctx); err != nil || h.Seq != 0 || h.Hash != nil {
		t.Fatalf("ChainHead of an empty store = %+v, %v; want zero", h, err)
	}
	const writers, rounds = 4, 25
	ba, _ := s.(store.BatchAppender)
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("chain-%d", w)
			for i := range rounds {
				var err error
				switch {
				case i%5 == 4:
					// A version conflict stores nothing and breaks nothing.
					if _, err := s.Append(ctx, stream, 1<<40, envs("Conflict", i, 1)); err == nil {
						errs <- fmt.Errorf("%s: append at a wrong version succeeded", stream)
					}
				case i%5 == 3 && ba != nil:
					res := ba.AppendBatch(ctx, []store.AppendRequest{
						{Stream: stream, Expected: store.AnyVersion, Envs: envs("Batched", i, 2)},
						{Stream: stream + "-side", Expected: 1 << 40, Envs: envs("Conflict", i, 1)},
						{Stream: stream + "-side", Expected: store.AnyVersion, Envs: envs("Batched", i, 3)},
					})
					err = res[0].Err
					if err == nil {
						err = res[2].Err
					}
				default:
					_, err = s.Append(ctx, stream, store.AnyVersion, envs("Chained", i, 1+i%3))
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	all := collect(t, "ReadAll", s.ReadAll(ctx, 0))
	rows := collect(t, "ReadChain", cr.ReadChain(ctx, 0))
	if len(rows) != len(all) || len(rows) == 0 {
		t.Fatalf("ReadChain yielded %d rows, ReadAll %d events", len(rows), len(all))
	}
	var prev [store.ChainHashSize]byte
	for i, r := range rows {
		if want := all[i]; r.Env.Seq != want.Seq || r.Env.Version != want.Version || r.Env.Stream != want.Stream ||
			!bytes.Equal(r.Env.Data, want.Data) || !r.Env.Time.Equal(want.Time) {
			t.Fatalf("ReadChain row %d = %+v, ReadAll gave %+v", i, r.Env, want)
		}
		want := store.ChainHash(prev, r.Env)
		if !bytes.Equal(r.Hash, want[:]) {
			t.Fatalf("seq %d: stored chain value %x, want %x (from the value of seq %d and the event)", r.Env.Seq, r.Hash, want, r.Env.Seq-1)
		}
		prev = want
	}
	// ReadChain from a seq in the middle starts there.
	mid := rows[len(rows)/2].Env.Seq
	if from := collect(t, "ReadChain", cr.ReadChain(ctx, mid)); len(from) == 0 || from[0].Env.Seq != mid {
		t.Errorf("ReadChain(%d) starts at %v", mid, from)
	}
	h, err := cr.ChainHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := rows[len(rows)-1]
	if h.Seq != last.Env.Seq || !bytes.Equal(h.Hash, last.Hash) {
		t.Errorf("ChainHead = seq %d %x, want the last row, seq %d %x", h.Seq, h.Hash, last.Env.Seq, last.Hash)
	}
}
