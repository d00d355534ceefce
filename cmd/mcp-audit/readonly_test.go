package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The inspection commands leave a database that no process has open as
// they found it: no -wal or -shm file appears beside it.
func TestInspectionCreatesNoFiles(t *testing.T) {
	db := writeHistory(t, "sess-good", goodHistory...)
	dir := filepath.Dir(db)
	list := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		slices.Sort(names)
		return names
	}
	want := []string{"events.db"}
	if got := list(); !slices.Equal(got, want) {
		t.Fatalf("before: %v", got)
	}
	for _, args := range [][]string{
		{"sessions"}, {"replay", "last"}, {"inspect", "last", "--seq", "3"}, {"verify", "--all"},
	} {
		code, _, errOut := runCmd(t, append([]string{"--db", db}, args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		if got := list(); !slices.Equal(got, want) {
			t.Errorf("after %q: %v, want %v", args, got, want)
		}
	}
}

// inspect --at before the session's start is a usage error naming the
// start, not a state at a negative offset.
func TestInspectAtBeforeStart(t *testing.T) {
	db := writeHistory(t, "sess-good", goodHistory...)
	for _, at := range []string{"-5ms", "2026-11-01T11:59:59Z"} {
		code, out, errOut := runCmd(t, "--db", db, "inspect", "last", "--at", at)
		if code != 2 || out != "" || !strings.Contains(errOut, "before the session's start, 2026-11-01T12:00:00Z") ||
			strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("inspect --at %s: exit %d, stdout %q, stderr %q", at, code, out, errOut)
		}
	}
	// The start itself is a point of the session.
	code, out, errOut := runCmd(t, "--db", db, "inspect", "last", "--at", "0ms")
	if code != 0 || !strings.Contains(out, "as of seq 5 (0.0ms after start)") {
		t.Errorf("inspect --at 0ms: exit %d, %q %q", code, out, errOut)
	}
}
