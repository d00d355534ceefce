package main

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// replay --follow streams events appended by another writer after it
// started, and stops cleanly when cancelled.
func TestReplayFollow(t *testing.T) {
	path := writeHistory(t, "s", &events.SessionStarted{Cwd: "/x"})
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		var errb strings.Builder
		done <- Run(ctx, []string{"--db", path, "replay", "s", "--follow"}, pw, &errb)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("output ended: %v", lines.Err())
		}
		return lines.Text()
	}
	if l := next(); l != "session s" {
		t.Fatalf("first line %q", l)
	}
	if l := next(); !strings.Contains(l, "SessionStarted") {
		t.Fatalf("second line %q", l)
	}
	appendHistory(t, path, "s", &events.SessionClosed{Reason: "bye"})
	if l := next(); !strings.Contains(l, "SessionClosed") || !strings.Contains(l, "reason=bye") {
		t.Fatalf("followed line %q", l)
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if code := <-done; code != 0 {
		t.Fatalf("exit %d after cancel", code)
	}
}

// run without --once follows the servers until interrupted, printing a
// line when one drops (and is reconnected), and tears everything down on
// the way out.
func TestRunFollowsUntilInterrupted(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	release := fixturetest.NewGate(t)
	cfg := writeConfig(t, map[string][]string{"steady": {"only=echo"}, "flaky": {"only=pid", release.Arg("exit-on-release")}})
	db := filepath.Join(t.TempDir(), "e.db")
	r := startRun(t, db, cfg)
	r.waitLine("watching for changes")
	release.Release()
	r.waitLine("flaky", "reconnecting", "process exited")
	r.interrupt()
	// The session was closed with every server disconnected.
	code, out, _ := runCmd(t, "--db", db, "replay", "last")
	if code != 0 || !strings.Contains(out, "steady reason=requested") || !strings.Contains(out, "SessionClosed") {
		t.Fatalf("replay: %d\n%s", code, out)
	}
}

// runningRun is `mcp-audit run` (without --once) running in the test,
// its output read line by line.
type runningRun struct {
	t      *testing.T
	lines  *bufio.Scanner
	out    *io.PipeReader
	cancel context.CancelFunc
	done   chan int
}

// startRun starts `mcp-audit --db db run --config cfg` until interrupt.
func startRun(t *testing.T, db, cfg string) *runningRun {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	r := &runningRun{t: t, lines: bufio.NewScanner(pr), out: pr, cancel: cancel, done: make(chan int)}
	go func() {
		var errb strings.Builder
		r.done <- Run(ctx, []string{"--db", db, "run", "--cwd", t.TempDir(), "--config", cfg}, pw, &errb)
		pw.Close()
	}()
	return r
}

// waitLine reads output until a line holds every one of want, and
// returns it.
func (r *runningRun) waitLine(want ...string) string {
	r.t.Helper()
	for r.lines.Scan() {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(r.lines.Text(), w)
		}
		if ok {
			return r.lines.Text()
		}
	}
	r.t.Fatalf("output ended before a line with %q", want)
	return ""
}

// interrupt ends the run as Ctrl-C does and checks that it tore down and
// exited 0.
func (r *runningRun) interrupt() {
	r.t.Helper()
	r.cancel()
	r.waitLine("disconnecting all servers")
	go io.Copy(io.Discard, r.out)
	if code := <-r.done; code != 0 {
		r.t.Fatalf("exit %d", code)
	}
}
