package sqlite

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

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
