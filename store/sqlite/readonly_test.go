package sqlite_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcplife/mcplife/store/sqlite"
)

// dirEntries returns the names in dir, sorted.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		entries[i] = filepath.Base(e)
	}
	slices.Sort(entries)
	return entries
}

// Inspecting a file that no process has open creates nothing beside it
// (no -wal, no -shm), and a reader that stays open still sees what a
// writer that opens the file afterwards commits, while it runs and after
// it closed.
func TestReadOnlyCreatesNoFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	w := mustOpen(t, path, nil)
	appendN(t, w, "a", 3)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"events.db"}
	if got := dirEntries(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after the writer closed: %v, want %v", got, want)
	}

	ro := mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	ctx := t.Context()
	n := 0
	for _, err := range ro.ReadAll(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if last, err := ro.LastSeq(ctx); err != nil || last != 3 || n != 3 {
		t.Fatalf("read-only store: %d events, LastSeq %d, %v; want 3", n, last, err)
	}
	if got := dirEntries(t, dir); !slices.Equal(got, want) {
		t.Errorf("while a read-only store is open: %v, want %v", got, want)
	}

	// A writer starts while the reader is open.
	w = mustOpen(t, path, nil)
	appendN(t, w, "b", 2)
	if last, err := ro.LastSeq(ctx); err != nil || last != 5 {
		t.Fatalf("read-only LastSeq after a later writer's append = %d, %v; want 5", last, err)
	}
	n = 0
	for _, err := range ro.ReadAll(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 5 {
		t.Fatalf("read-only ReadAll after a later writer's append: %d events, want 5", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A writer that opens, appends and closes between two reads leaves
	// no -wal behind, only a changed file.
	w = mustOpen(t, path, nil)
	appendN(t, w, "c", 2)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if last, err := ro.LastSeq(ctx); err != nil || last != 7 {
		t.Fatalf("read-only LastSeq after a writer came and went = %d, %v; want 7", last, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	// The files the writer made while a reader had the file open stay
	// until a writer closes it last; after that, reading it leaves it as
	// it was.
	w = mustOpen(t, path, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := fileHash(t, path)
	ro = mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	if last, err := ro.LastSeq(ctx); err != nil || last != 7 {
		t.Fatalf("LastSeq = %d, %v; want 7", last, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dirEntries(t, dir); !slices.Equal(got, want) {
		t.Errorf("after a read-only store closed: %v, want %v", got, want)
	}
	if fileHash(t, path) != before {
		t.Error("a read-only store changed the file")
	}
}
