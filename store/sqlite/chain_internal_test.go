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
// (the goroutine ahead of every row, the writer computing rows before the
// goroutine has run and after it, either finding a chunk of digests the
// other took and has not finished, the goroutine not running at all),
// insert binds the values the chain's definition gives, done returns the
// last, and a goroutine left over from a done append changes nothing.
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
	// writerRows returns the rows whose values the writer computed, as
	// ranges [from, to).
	writerRows := func(c *rowChain) (rs [][2]int) {
		for i := range n {
			if !c.mine[i] {
				continue
			}
			if len(rs) > 0 && rs[len(rs)-1][1] == i {
				rs[len(rs)-1][1]++
			} else {
				rs = append(rs, [2]int{i, i + 1})
			}
		}
		return rs
	}
	for _, tc := range []struct {
		name   string
		alone  bool // no goroutine
		run    func(t *testing.T, c *rowChain, gen uint64)
		writer [][2]int
	}{
		{"goroutine ahead of every row", false, func(t *testing.T, c *rowChain, gen uint64) {
			for c.helpChunk(gen) {
			}
			c.wait(n)
		}, nil},
		{"writer first, then the goroutine, then the writer", false, func(t *testing.T, c *rowChain, gen uint64) {
			c.wait(20) // takes the digests of chunks 0 and 1
			for range 3 {
				c.helpChunk(gen) // steps chunks 0 and 1 on the writer's digests
			}
			c.wait(n)
			if got := c.next.Load(); got != int64((n+digestChunk-1)/digestChunk) {
				t.Errorf("%d chunks of digests taken, want all", got)
			}
		}, [][2]int{{0, 20}, {3 * digestChunk, n}}},
		{"the goroutine's chunk in progress", false, func(t *testing.T, c *rowChain, gen uint64) {
			c.next.Store(1) // chunk 0 as the goroutine takes it
			c.wait(n)
			if c.sideFrom != 0 {
				t.Errorf("chunk 0 was not hashed on the side (sideFrom %d)", c.sideFrom)
			}
		}, [][2]int{{0, n}}},
		{"the writer's chunk in progress", false, func(t *testing.T, c *rowChain, gen uint64) {
			c.next.Store(1) // chunk 0 as the writer takes it
			c.helpChunk(gen)
			if c.helpSide == nil || c.stepped.Load() != digestChunk {
				t.Errorf("the goroutine did not step chunk 0 on digests of its own (stepped %d)", c.stepped.Load())
			}
			c.ready[0].Store(true) // as the writer would have
			copy(c.sums, c.helpSide)
			c.wait(n)
		}, [][2]int{{digestChunk, n}}},
		{"no goroutine", true, func(t *testing.T, c *rowChain, gen uint64) { c.wait(n) }, [][2]int{{0, n}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c rowChain
			c.reset(first, "st", envs, seq, version, !tc.alone)
			gen := c.gen
			tc.run(t, &c, gen)
			for i := range n {
				if got := c.value(i).([]byte); !bytes.Equal(got, want[i][:]) {
					t.Fatalf("row %d: value %x, want %x", i, got, want[i])
				}
			}
			if got := writerRows(&c); fmt.Sprint(got) != fmt.Sprint(tc.writer) {
				t.Errorf("rows the writer computed: %v, want %v", got, tc.writer)
			}
			if last := c.done(); last != want[n-1] {
				t.Errorf("done: %x, want %x", last, want[n-1])
			}
			stepped := c.stepped.Load()
			if c.helpChunk(gen) || c.stepped.Load() != stepped {
				t.Error("a goroutine of the done append went on")
			}
			c.reset(first, "st", envs, seq, version, true)
			if c.helpChunk(gen) || c.stepped.Load() != 0 {
				t.Error("a goroutine of the done append worked for the next")
			}
			c.done()
		})
	}
}
