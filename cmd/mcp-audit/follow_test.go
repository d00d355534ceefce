package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
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
