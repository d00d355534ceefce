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
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		var errb strings.Builder
		done <- Run(ctx, []string{"--db", db, "run", "--cwd", t.TempDir(), "--config", cfg}, pw, &errb)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	waitLine := func(want ...string) {
		t.Helper()
		for lines.Scan() {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(lines.Text(), w)
			}
			if ok {
				return
			}
		}
		t.Fatalf("output ended before a line with %q", want)
	}
	waitLine("watching for changes")
	release.Release()
	waitLine("flaky", "reconnecting", "process exited")
	cancel()
	waitLine("disconnecting all servers")
	go io.Copy(io.Discard, pr)
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	// The session was closed with every server disconnected.
	code, out, _ := runCmd(t, "--db", db, "replay", "last")
	if code != 0 || !strings.Contains(out, "steady reason=requested") || !strings.Contains(out, "SessionClosed") {
		t.Fatalf("replay: %d\n%s", code, out)
	}
}
