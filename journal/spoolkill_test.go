//go:build unix

package journal_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/memory"
)

// Environment of the process TestSpoolingWriter becomes.
const spoolWriterEnv = "MCPLIFE_JOURNAL_TEST_SPOOL_WRITER"

// TestSpoolingWriter is not a test: run as a child process with
// spoolWriterEnv naming a spool directory, it is a host whose store is
// down for good, recording deferred events that go to the spool; it prints
// how many it has appended after each Flush, and runs until it is killed.
// Otherwise it does nothing.
func TestSpoolingWriter(t *testing.T) {
	dir := os.Getenv(spoolWriterEnv)
	if dir == "" {
		return
	}
	st := newDownStore()
	st.setDown(true)
	j, err := journal.New(st, &journal.Options{HeldBytes: 1, Spool: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; ; i++ {
		if err := j.AppendDeferred(ctx, "killed", "", nil, ev(i)); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			if err := j.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			fmt.Println(i + 1)
		}
	}
}

// A host killed with SIGKILL while its store is down leaves its spool; the
// next journal on that spool stores what it holds, in order, before its own
// events, and removes it.
func TestSpoolLeftByKilledHostStoredByNext(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpoolingWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), spoolWriterEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	spooled := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if n, err := strconv.Atoi(sc.Text()); err == nil {
			spooled = n
		}
		if spooled >= 1000 {
			cmd.Process.Kill()
			break
		}
	}
	cmd.Wait()
	if spooled < 1000 {
		t.Fatalf("the writer stopped after %d events: %v", spooled, sc.Err())
	}

	st := memory.New()
	defer st.Close()
	j, err := journal.New(st, &journal.Options{Spool: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Append(context.Background(), "next", ev(-1)); err != nil {
		t.Fatal(err)
	}
	got := storedStory(t, st)
	if len(got) < spooled+1 || got[len(got)-1] != "s-1" {
		t.Fatalf("stored %d events (last %v), want the %d spooled before the next host's own", len(got), got[len(got)-1:], spooled)
	}
	if want := names(0, len(got)-1); !slices.Equal(got[:len(got)-1], want) {
		t.Fatalf("the spooled events are not stored once each, in order")
	}
	if files := spoolFiles(t, dir); len(files) != 0 {
		t.Errorf("spool files left: %v", files)
	}
	t.Logf("killed after spooling %d events; the next host stored %d of them", spooled, len(got)-1)
}
