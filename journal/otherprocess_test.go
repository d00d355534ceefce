//go:build cgo

package journal_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store/sqlite"
)

// These tests share a SQLite file between processes, so they need the
// SQLite store, which needs cgo.

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
