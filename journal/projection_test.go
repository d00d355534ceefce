package journal_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/store/sqlite"
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

// Environment of the writer process TestOtherProcessWriter becomes.
const (
	writerDBEnv     = "MCPLIFE_JOURNAL_TEST_WRITER_DB"
	writerServerEnv = "MCPLIFE_JOURNAL_TEST_WRITER_SERVER"
)

// TestOtherProcessWriter is not a test: run as a child process with
// writerDBEnv set, it is another agent process on the same database,
// appending a session with server's tool list through a journal of its own.
// Otherwise it does nothing.
func TestOtherProcessWriter(t *testing.T) {
	path := os.Getenv(writerDBEnv)
	if path == "" {
		return
	}
	server := os.Getenv(writerServerEnv)
	db, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j, err := journal.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	session := "session-of-" + server
	if _, err := j.Append(t.Context(), session, &events.SessionStarted{Cwd: "/elsewhere"}, toolsListed(server), &events.SessionClosed{}); err != nil {
		t.Fatal(err)
	}
}

// writeFromOtherProcess runs TestOtherProcessWriter in a child process on
// the database at path and waits for it to finish.
func writeFromOtherProcess(t *testing.T, path, server string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOtherProcessWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), writerDBEnv+"="+path, writerServerEnv+"="+server)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writer process for %s: %v\n%s", server, err, out)
	}
}

// checkToolCacheCheckpoint fails t unless the tool cache checkpoint in db
// holds the tool list of every ToolsListed event up to the sequence it
// claims: a checkpoint that claims an event it never applied makes every
// process restoring it lose that list for good.
func checkToolCacheCheckpoint(t *testing.T, db *sqlite.DB) {
	t.Helper()
	ctx := t.Context()
	seq, data, err := db.LoadSnapshot(ctx, projector.ToolCacheSnapshotName)
	if err != nil {
		t.Fatalf("load tool cache checkpoint: %v", err)
	}
	cp := projector.NewToolCache()
	if err := cp.UnmarshalSnapshot(data); err != nil {
		t.Fatal(err)
	}
	if cp.LastSeq() != seq {
		t.Errorf("checkpoint saved at seq %d holds a cache up to seq %d", seq, cp.LastSeq())
	}
	for env, err := range db.ReadAll(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Seq > seq {
			break
		}
		if env.Type != events.TypeToolsListed {
			continue
		}
		ev, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		tl := ev.(*events.ToolsListed)
		if _, _, ok := cp.Lookup(tl.Server, tl.ConfigHash, time.Now()); !ok {
			t.Errorf("checkpoint at seq %d claims seq %d (tools of %s) but does not hold it", seq, env.Seq, tl.Server)
		}
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

// Every agent process of a user shares the default SQLite database. The
// tool cache attached to one process's journal must hold the tools other
// processes listed, and its checkpoint must never claim events it did not
// apply, also for a process that restores it.
func TestProjectionSeesOtherProcesses(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "events.db")
	db, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A checkpoint after every append, so a wrong one cannot hide.
	j, err := journal.New(db, &journal.Options{CheckpointEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	cache := projector.NewToolCache()
	seen := &seqRecorder{}
	for _, p := range []journal.Projection{cache, seen} {
		if err := j.Attach(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	var servers []string
	for round := range 2 {
		ours, theirs := fmt.Sprintf("ours-%d", round), fmt.Sprintf("theirs-%d", round)
		if _, err := j.Append(ctx, "ours", toolsListed(ours)); err != nil {
			t.Fatal(err)
		}
		writeFromOtherProcess(t, path, theirs)
		servers = append(servers, ours, theirs)
	}
	if _, err := j.Append(ctx, "ours", toolsListed("ours-last")); err != nil {
		t.Fatal(err)
	}
	servers = append(servers, "ours-last")

	last, err := db.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen.checkApplied(t, last)
	checkCache(t, "live cache", cache, servers)
	checkToolCacheCheckpoint(t, db)

	// Close saves the checkpoint once more; a process starting later
	// restores it and must see every list too.
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	checkToolCacheCheckpoint(t, db)
	if seq, _, err := db.LoadSnapshot(ctx, projector.ToolCacheSnapshotName); err != nil || seq != last {
		t.Errorf("checkpoint at Close: seq %d, %v; want %d", seq, err, last)
	}
	reopened, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	j2, err := journal.New(reopened, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	restored := projector.NewToolCache()
	if err := j2.Attach(ctx, restored); err != nil {
		t.Fatal(err)
	}
	checkCache(t, "cache restored from the checkpoint", restored, servers)
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
