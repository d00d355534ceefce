package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/mcplife/mcplife/store/sqlite"
	"github.com/mcplife/mcplife/store/storetest"
)

func TestTranscript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	db, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Transcript(t, db)
	db.Close()
	// Read-only, the lines are there too.
	ro, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got, err := ro.ReadTranscript(t.Context(), "s1"); err != nil || len(got) != 3 {
		t.Fatalf("read-only ReadTranscript = %d lines, %v; want 3", len(got), err)
	}
}
