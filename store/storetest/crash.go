package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// ackPrefix starts each line [AppendUntilDone] writes; other output of the
// writer's process (a test binary's own lines) is ignored.
const ackPrefix = "storetest-ack "

// AppendUntilDone appends batches of one to three events to three streams,
// in turn and with exact expected versions, until ctx is done or an append
// or write fails, and returns that error. After every Append that returns
// nil it writes one line to w naming the stored envelopes, before the next
// Append starts; w should be unbuffered (a pipe to the parent process), so a
// line the reader sees is an acknowledged append. It continues a store that
// an earlier, killed run left behind.
//
// It is the writer a [Features.Durability] hook kills: run it in a child
// process and read its output with [KillAfterAcks].
func AppendUntilDone(ctx context.Context, s store.Store, w io.Writer) error {
	const streams = 3
	var version [streams]int64
	for info, err := range s.Streams(ctx) {
		if err != nil {
			return fmt.Errorf("storetest: resume: %w", err)
		}
		var i int
		if _, err := fmt.Sscanf(info.Stream, "crash-%d", &i); err == nil && i >= 0 && i < streams {
			version[i] = int64(info.Version)
		}
	}
	start, err := s.LastSeq(ctx)
	if err != nil {
		return fmt.Errorf("storetest: resume: %w", err)
	}
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		i := n % streams
		stream := fmt.Sprintf("crash-%d", i)
		// Batch ids stay unique across runs: a run starts after the last
		// stored seq.
		id := fmt.Sprintf("r%d-b%d", start, n)
		es := batch(id, 1+n%3, base.Add(time.Duration(n)*time.Microsecond))
		got, err := s.Append(ctx, stream, version[i], es)
		if err != nil {
			return fmt.Errorf("storetest: append %d: %w", n, err)
		}
		version[i] = int64(got[len(got)-1].Version)
		line, err := json.Marshal(got)
		if err != nil {
			return fmt.Errorf("storetest: encode append %d: %w", n, err)
		}
		if _, err := fmt.Fprintf(w, "%s%s\n", ackPrefix, line); err != nil {
			return fmt.Errorf("storetest: acknowledge append %d: %w", n, err)
		}
	}
}

// KillAfterAcks starts cmd, a process running [AppendUntilDone] with its
// standard output as w, reads its output until it has acknowledged n
// appends, then kills it (SIGKILL on Unix) and waits for it. It returns the
// envelopes of every acknowledged append. It fails t if the process stops
// before acknowledging n appends or exits by itself.
//
// It synchronises on the process's output only: the kill lands while the
// writer is busy with a later append.
func KillAfterAcks(t *testing.T, cmd *exec.Cmd, n int) []events.Envelope {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("writer stdout: %v", err)
	}
	var stderr bytes.Buffer
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start writer %s: %v", cmd.Path, err)
	}
	// A writer that hangs without output is killed at the test's deadline
	// (or after two minutes), which ends the read below; the normal path
	// kills it after n acknowledgements and stops the timer.
	limit := 2 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(d)*9/10)
	}
	watchdog := time.AfterFunc(limit, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()

	var acked []events.Envelope
	appends := 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for appends < n && sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), ackPrefix)
		if !ok {
			continue
		}
		var got []events.Envelope
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("writer acknowledgement %d: %v", appends+1, err)
		}
		acked = append(acked, got...)
		appends++
	}
	scanErr := sc.Err()
	killErr := cmd.Process.Kill()
	waitErr := cmd.Wait()
	if appends < n {
		t.Fatalf("writer stopped after %d of %d acknowledged appends (read: %v, wait: %v)\nstderr:\n%s", appends, n, scanErr, waitErr, &stderr)
	}
	if killErr != nil && !errors.Is(killErr, os.ErrProcessDone) {
		t.Fatalf("kill writer: %v", killErr)
	}
	if cmd.ProcessState.Exited() {
		t.Fatalf("writer exited by itself (%v) instead of being killed\nstderr:\n%s", cmd.ProcessState, &stderr)
	}
	return acked
}
