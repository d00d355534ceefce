package sqlite

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/verify"
)

// A group transaction that fails after writing its events leaves the
// writer's last event as it was, so the next append chains on what the
// log holds, not on what was rolled back.
func TestFailedTransactionKeepsTheChainTail(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "events.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	boom := errors.New("boom")
	txs := 0
	db.testHookInTx = func() error {
		if txs++; txs == 2 {
			return boom
		}
		return nil
	}
	if _, err := db.Append(ctx, "s", store.AnyVersion, groupEvents(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, "s", store.AnyVersion, groupEvents(5)); !errors.Is(err, boom) {
		t.Fatalf("append in a failing transaction: %v, want %v", err, boom)
	}
	out, err := db.Append(ctx, "s", store.AnyVersion, groupEvents(2))
	if err != nil || out[0].Seq != 4 {
		t.Fatalf("append after the failure: %v, %v; want seqs from 4", out, err)
	}
	rep, err := verify.CheckChain(ctx, db, nil)
	if err != nil || !rep.OK() || rep.Events != 5 || rep.HeadSeq != 5 {
		t.Fatalf("chain: %+v, %v; want 5 events intact", rep, err)
	}
	var prev [store.ChainHashSize]byte
	for c, err := range db.ReadChain(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if prev = store.ChainHash(prev, c.Env); !bytes.Equal(c.Hash, prev[:]) {
			t.Fatalf("seq %d: chain value %x, want %x", c.Env.Seq, c.Hash, prev)
		}
	}
}

// However the writer and the goroutine share an append's chain values
// (the goroutine ahead of every row, the writer taking the steps over
// after some chunks or before any, the writer needing a chunk the
// goroutine took but has not finished, the goroutine not running at all),
// insert binds the values the chain's definition gives, and done returns
// the last.
func TestRowChainSharing(t *testing.T) {
	const n, seq, version = 3*digestChunk*2 + 5, 41, 7 // a short last chunk
	envs := make([]events.Envelope, n)
	for i := range envs {
		envs[i] = events.Envelope{Type: "T", Schema: 1, Time: time.Unix(0, int64(i)), SessionID: "s",
			Data: fmt.Appendf(nil, `{"i":%d}`, i)}
	}
	first := store.ChainHash([store.ChainHashSize]byte{}, events.Envelope{Seq: seq - 1, Type: "before"})
	want := make([][store.ChainHashSize]byte, n)
	prev := first
	for i, e := range envs {
		e.Stream, e.Seq, e.Version = "st", seq+uint64(i), version+uint64(i)
		prev = store.ChainHash(prev, e)
		want[i] = prev
	}
	chunks := (n + digestChunk - 1) / digestChunk
	for _, tc := range []struct {
		name  string
		alone bool // no goroutine
		run   func(t *testing.T, c *rowChain)
	}{
		{"goroutine ahead of every row", false, func(t *testing.T, c *rowChain) {
			for c.helpChunk() {
			}
			c.wait(n)
			if c.split != n {
				t.Errorf("the writer took over at row %d", c.split)
			}
		}},
		{"taken over after three chunks", false, func(t *testing.T, c *rowChain) {
			for range 3 {
				c.helpChunk()
			}
			c.wait(4*digestChunk + 1)
			if c.split != 3*digestChunk {
				t.Errorf("the writer took over at row %d, want %d", c.split, 3*digestChunk)
			}
			c.helpChunk() // digests alone from now on
			c.helpChunk()
			if c.stepped.Load() != 3*digestChunk {
				t.Errorf("the goroutine stepped %d rows after the writer took over", c.stepped.Load())
			}
			c.wait(n)
		}},
		{"taken over before any row", false, func(t *testing.T, c *rowChain) {
			c.wait(1)
			for c.helpChunk() {
			}
			c.wait(n)
			if c.split != 0 {
				t.Errorf("the writer took over at row %d", c.split)
			}
		}},
		{"a chunk taken and not finished", false, func(t *testing.T, c *rowChain) {
			c.wait(1)               // taken over
			c.next.Add(1)           // chunk 1 as the goroutine takes it
			c.wait(2 * digestChunk) // needs chunk 1
			if c.sideFrom != digestChunk {
				t.Errorf("chunk 1 was not hashed on the side (sideFrom %d)", c.sideFrom)
			}
			c.wait(n)
		}},
		{"no goroutine", true, func(t *testing.T, c *rowChain) { c.wait(n) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c rowChain
			c.reset(first, "st", envs, seq, version, !tc.alone)
			tc.run(t, &c)
			for i := range n {
				if got := c.value(i).([]byte); !bytes.Equal(got, want[i][:]) {
					t.Fatalf("row %d: value %x, want %x", i, got, want[i])
				}
			}
			if last := c.done(); last != want[n-1] {
				t.Errorf("done: %x, want %x", last, want[n-1])
			}
			if c.next.Load() < int64(chunks) {
				t.Errorf("chunks left to take after done: %d of %d taken", c.next.Load(), chunks)
			}
		})
	}
}
