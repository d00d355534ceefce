package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// groupHarness holds the first group transaction open until release is
// called, and reports each Append joining the queue on queued.
type groupHarness struct {
	db      *DB
	entered chan struct{} // closed when the first transaction reaches its commit
	block   chan struct{}
	queued  chan int
	fail    error // returned by the hook in the second transaction
}

func newGroupHarness(t *testing.T) *groupHarness {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "events.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := &groupHarness{db: db, entered: make(chan struct{}), block: make(chan struct{}), queued: make(chan int, 64)}
	// Group transactions run one at a time (the leader holds the writer),
	// so the hook needs no lock of its own.
	txs := 0
	db.testHookInTx = func() error {
		txs++
		switch txs {
		case 1:
			close(h.entered)
			<-h.block
		case 2:
			return h.fail
		}
		return nil
	}
	db.commits.TestHookQueued = func(n int) { h.queued <- n }
	return h
}

func (h *groupHarness) release() { close(h.block) }

type appendResult struct {
	out []events.Envelope
	err error
}

// start runs an Append in a goroutine and waits until it has joined the
// queue. The result arrives on the returned channel.
func (h *groupHarness) start(ctx context.Context, stream string, expected int64, n int) <-chan appendResult {
	res := make(chan appendResult, 1)
	go func() {
		out, err := h.db.Append(ctx, stream, expected, groupEvents(n))
		res <- appendResult{out, err}
	}()
	<-h.queued
	return res
}

func groupEvents(n int) []events.Envelope {
	es := make([]events.Envelope, n)
	for i := range es {
		es[i] = benchEnvelope(i)
	}
	return es
}

// TestGroupCommitSharesTransactions queues 19 appends behind a commit held
// open and checks that they share one transaction: 20 appends, 2 commits,
// gapless sequence numbers.
func TestGroupCommitSharesTransactions(t *testing.T) {
	h := newGroupHarness(t)
	ctx := t.Context()
	first := h.start(ctx, "s-0", store.NoStream, 1)
	<-h.entered
	var wg sync.WaitGroup
	results := make([]appendResult, 20)
	for i := 1; i < 20; i++ {
		wg.Go(func() {
			out, err := h.db.Append(ctx, fmt.Sprintf("s-%d", i), store.NoStream, groupEvents(1))
			results[i] = appendResult{out, err}
		})
	}
	for range 19 {
		<-h.queued
	}
	h.release()
	wg.Wait()
	results[0] = <-first
	seen := map[uint64]bool{}
	for i, r := range results {
		if r.err != nil || len(r.out) != 1 {
			t.Fatalf("append %d: %d events, %v", i, len(r.out), r.err)
		}
		seen[r.out[0].Seq] = true
	}
	for seq := uint64(1); seq <= 20; seq++ {
		if !seen[seq] {
			t.Fatalf("seq %d not acknowledged; acknowledged %v", seq, seen)
		}
	}
	if n := h.db.groupTxs.Load(); n != 2 {
		t.Fatalf("20 appends took %d transactions, want 2 (one held open, one for the 19 queued behind it)", n)
	}
}

// TestGroupCommitIsolatesRequests checks that in a shared transaction a
// conflicting request fails alone, a request cancelled while queued writes
// nothing, and a request cancelled after its transaction started is
// committed.
func TestGroupCommitIsolatesRequests(t *testing.T) {
	h := newGroupHarness(t)
	firstCtx, cancelFirst := context.WithCancel(t.Context())
	first := h.start(firstCtx, "first", store.NoStream, 1)
	<-h.entered
	cancelFirst() // too late: its transaction has started

	ctx := t.Context()
	ok := h.start(ctx, "x", store.NoStream, 2)
	conflict := h.start(ctx, "x", store.NoStream, 1)
	other := h.start(ctx, "y", store.AnyVersion, 1)
	queuedCtx, cancelQueued := context.WithCancel(ctx)
	cancelled := h.start(queuedCtx, "x", store.AnyVersion, 1)
	cancelQueued()
	if r := <-cancelled; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("append cancelled while queued: %v, want context.Canceled", r.err)
	}
	next := h.start(ctx, "x", 2, 1)
	h.release()

	check := func(name string, res <-chan appendResult, seq, version uint64) {
		t.Helper()
		r := <-res
		if r.err != nil || len(r.out) == 0 || r.out[0].Seq != seq || r.out[0].Version != version {
			t.Fatalf("%s: %+v, %v; want seq %d version %d", name, r.out, r.err, seq, version)
		}
	}
	check("append cancelled in its transaction", first, 1, 1)
	check("first append to x", ok, 2, 1)
	if r := <-conflict; !errors.Is(r.err, store.ErrVersionConflict) || r.out != nil {
		t.Fatalf("conflicting append: %v, %v; want ErrVersionConflict", r.out, r.err)
	}
	check("append to y", other, 4, 1)
	check("append to x at version 2", next, 5, 3)
	if n := h.db.groupTxs.Load(); n != 2 {
		t.Fatalf("%d transactions, want 2", n)
	}
	var seqs []uint64
	for e, err := range h.db.ReadAll(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4 5]" {
		t.Fatalf("stored seqs %v, want [1 2 3 4 5]", seqs)
	}
}

// TestGroupCommitFailsTogether fails a shared transaction and checks that
// every request in it gets the error and nothing is stored.
func TestGroupCommitFailsTogether(t *testing.T) {
	h := newGroupHarness(t)
	h.fail = errors.New("injected")
	ctx := t.Context()
	first := h.start(ctx, "first", store.NoStream, 1)
	<-h.entered
	a := h.start(ctx, "a", store.NoStream, 1)
	conflict := h.start(ctx, "first", store.NoStream, 1)
	b := h.start(ctx, "b", store.NoStream, 2)
	h.release()
	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	for name, res := range map[string]<-chan appendResult{"a": a, "b": b} {
		if r := <-res; !errors.Is(r.err, h.fail) || r.out != nil {
			t.Errorf("append %s in the failed transaction: %v, %v; want the injected error", name, r.out, r.err)
		}
	}
	if r := <-conflict; !errors.Is(r.err, store.ErrVersionConflict) {
		t.Errorf("conflicting append in the failed transaction: %v; want its own ErrVersionConflict", r.err)
	}
	out, err := h.db.Append(ctx, "a", store.NoStream, groupEvents(1))
	if err != nil || out[0].Seq != 2 {
		t.Fatalf("append after the failed transaction: %+v, %v; want seq 2", out, err)
	}
}

func TestDurabilityPragma(t *testing.T) {
	for _, c := range []struct {
		level Durability
		want  int
	}{{"", 1}, {Normal, 1}, {Full, 2}} {
		db, err := Open(filepath.Join(t.TempDir(), "events.db"), &Options{Durability: c.level})
		if err != nil {
			t.Fatal(err)
		}
		var got int
		if err := db.wconn.QueryRowContext(t.Context(), "PRAGMA synchronous").Scan(&got); err != nil || got != c.want {
			t.Errorf("Durability %q: synchronous = %d, %v; want %d", c.level, got, err, c.want)
		}
		db.Close()
	}
	if _, err := Open(filepath.Join(t.TempDir(), "events.db"), &Options{Durability: "paranoid"}); err == nil {
		t.Error("Open with an unknown Durability succeeded")
	}
}
