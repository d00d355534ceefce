package session_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/sqlite"
)

// With no journal the session records into $MCP_AUDIT_DB when it names a
// file, and closes that store itself: SessionClosed is stored last.
func TestNilJournalRecordsIntoTheDefaultStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sub", "audit.db")
	t.Setenv("MCP_AUDIT_DB", db)
	s, err := session.Start(t.Context(), nil, &session.Options{Loader: loader.Options{Cwd: t.TempDir()}, Servers: []events.ServerConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	st, err := sqlite.Open(db, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var types []string
	for env, err := range st.ReadStream(t.Context(), s.ID(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, env.Type)
	}
	if len(types) < 2 || types[0] != events.TypeSessionStarted || types[len(types)-1] != events.TypeSessionClosed {
		t.Fatalf("recorded %v, want SessionStarted first and SessionClosed last", types)
	}
}

// A PostgreSQL URL in $MCP_AUDIT_DB is for mcp-audit; a session without a
// journal says how to use it, without quoting the URL's password.
func TestNilJournalRefusesPostgresDefault(t *testing.T) {
	t.Setenv("MCP_AUDIT_DB", "postgres://u:s3cret@db.example/x")
	_, err := session.Start(t.Context(), nil, &session.Options{Loader: loader.Options{Cwd: t.TempDir()}, Servers: []events.ServerConfig{}})
	if err == nil || !strings.Contains(err.Error(), "MCP_AUDIT_DB") || !strings.Contains(err.Error(), "pass a journal") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Start = %v", err)
	}
}

// A journal passed in stays the caller's: closing the session leaves it
// open.
func TestGivenJournalStaysOpen(t *testing.T) {
	j, _ := newJournal(t)
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: t.TempDir()}, Servers: []events.ServerConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(t.Context(), "after", &events.SessionClosed{Reason: "closed"}); err != nil {
		t.Fatalf("the caller's journal was closed with the session: %v", err)
	}
}
