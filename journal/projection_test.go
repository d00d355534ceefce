package journal_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

// seqRecorder is a projection that records the sequence of every envelope
// applied to it.
type seqRecorder struct {
	mu   sync.Mutex
	seqs []uint64
}

func (r *seqRecorder) Apply(env events.Envelope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seqs = append(r.seqs, env.Seq)
}

func (r *seqRecorder) LastSeq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seqs) == 0 {
		return 0
	}
	return r.seqs[len(r.seqs)-1]
}

// checkApplied fails t unless exactly the sequences 1 to last were applied
// to r, in order.
func (r *seqRecorder) checkApplied(t *testing.T, last uint64) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	want := make([]uint64, last)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if !slices.Equal(r.seqs, want) {
		t.Errorf("applied %v, want 1 to %d in order", r.seqs, last)
	}
}

// toolsListed is the tool list of server under the configuration hash
// "hash-" + server.
func toolsListed(server string) *events.ToolsListed {
	return &events.ToolsListed{
		Server: server, ConfigHash: "hash-" + server, Cause: events.CauseInitial,
		Tools: []events.ToolDef{{Name: "tool-of-" + server}}, Count: 1,
	}
}

// checkCache fails t unless c holds the tool list of every server.
func checkCache(t *testing.T, what string, c *projector.ToolCache, servers []string) {
	t.Helper()
	for _, s := range servers {
		if tools, _, ok := c.Lookup(s, "hash-"+s, time.Now()); !ok || tools[0].Name != "tool-of-"+s {
			t.Errorf("%s: no tools of %s (got %v)", what, s, tools)
		}
	}
}

// Two journals on one store stand for two processes. Each append brings
// the projections up to date with the other's events first; when reading
// them fails, the projections stay where they were, with no checkpoint
// beyond it, and the next append catches them up.
func TestProjectionFillsGapsFromStore(t *testing.T) {
	ctx := t.Context()
	st := &faultyStore{snapshotStore: memory.New()}
	j, err := journal.New(st, &journal.Options{CheckpointEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	other, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c := &counter{}
	seen := &seqRecorder{}
	for _, p := range []journal.Projection{c, seen} {
		if err := j.Attach(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	appendTo := func(j *journal.Journal, n int) {
		t.Helper()
		for i := range n {
			if _, err := j.Append(ctx, "s", ev(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(step string, applied uint64) {
		t.Helper()
		seen.checkApplied(t, applied)
		if c.n != int(applied) || c.last != applied {
			t.Errorf("%s: counter saw %d events up to seq %d, want %d up to %d", step, c.n, c.last, applied, applied)
		}
		seq, _, err := st.LoadSnapshot(ctx, c.Name())
		if err != nil || seq != applied {
			t.Errorf("%s: checkpoint at seq %d (%v), want %d", step, seq, err, applied)
		}
	}

	appendTo(j, 1)     // 1
	appendTo(other, 2) // 2, 3
	appendTo(j, 1)     // 4, after 2 and 3 from the store
	check("after the other journal's events", 4)

	appendTo(other, 2) // 5, 6
	st.failReads(errInjected)
	appendTo(j, 1) // 7: 5 and 6 cannot be read, so 7 waits too
	check("after a failed read", 4)

	st.failReads(nil)
	appendTo(j, 1) // 8, after 5 to 7 from the store
	check("after the read works again", 8)
}

// A checkpoint is never saved at a sequence above the last envelope the
// journal applied to the projection, even when the projection claims one
// (here because it was fed outside the journal).
func TestCheckpointNeverAheadOfApplied(t *testing.T) {
	ctx := t.Context()
	j, st := newJournal(t, nil)
	c := &counter{}
	if err := j.Attach(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(ctx, "s", ev(1)); err != nil {
		t.Fatal(err)
	}
	c.Apply(events.Envelope{Seq: 100})
	j.Checkpoint(ctx)
	sn := st.(store.Snapshotter)
	if seq, _, err := sn.LoadSnapshot(ctx, c.Name()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("checkpoint saved at seq %d (%v); the journal applied only seq 1", seq, err)
	}
}

// A detached projection is given nothing more; the others go on.
func TestDetach(t *testing.T) {
	j, _ := newJournal(t, nil)
	ctx := context.Background()
	kept, gone := &seqRecorder{}, &seqRecorder{}
	for _, p := range []journal.Projection{kept, gone} {
		if err := j.Attach(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Append(ctx, "s", ev(1), ev(2)); err != nil {
		t.Fatal(err)
	}
	j.Detach(gone)
	j.Detach(gone) // again: nothing
	if _, err := j.Append(ctx, "s", ev(3)); err != nil {
		t.Fatal(err)
	}
	if err := j.AppendDeferred(ctx, "s", "", nil, ev(4)); err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	kept.checkApplied(t, 4)
	gone.checkApplied(t, 2)
}

// sharer records the events the journal decoded for it.
type sharer struct {
	last uint64
	seen []events.Event
}

func (s *sharer) Apply(env events.Envelope) { s.ApplyDecoded(env, nil) }
func (s *sharer) LastSeq() uint64           { return s.last }
func (s *sharer) ApplyDecoded(env events.Envelope, decode func() (events.Event, error)) {
	s.last = env.Seq
	if decode == nil {
		s.seen = append(s.seen, nil)
		return
	}
	ev, err := decode()
	if err != nil {
		panic(err)
	}
	s.seen = append(s.seen, ev)
}

// TestSharedDecodingDecodesOnce checks that projections that take the
// journal's decoding get one decoded event between them.
func TestSharedDecodingDecodesOnce(t *testing.T) {
	ctx := t.Context()
	j, err := journal.New(memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	a, b := &sharer{}, &sharer{}
	for _, p := range []journal.Projection{a, b} {
		if err := j.Attach(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Append(ctx, "s", &events.SessionStarted{Cwd: "/w"}, &events.StartupGateElapsed{}); err != nil {
		t.Fatal(err)
	}
	if len(a.seen) != 2 || len(b.seen) != 2 {
		t.Fatalf("applied %d and %d events, want 2 each", len(a.seen), len(b.seen))
	}
	for i := range a.seen {
		if a.seen[i] == nil || a.seen[i] != b.seen[i] {
			t.Errorf("event %d: projections got %p and %p, want one shared decoding", i, a.seen[i], b.seen[i])
		}
	}
	if _, ok := a.seen[0].(*events.SessionStarted); !ok {
		t.Errorf("first event decoded as %T", a.seen[0])
	}
}
