package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The spool of a SQLite store is beside its file; that of a PostgreSQL
// store is in the default store's directory, one per server, database and
// schema, named without the password.
func TestSpoolDir(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("MCP_AUDIT_DB", "")
	if got, want := (&globals{db: "/data/e.db"}).spoolDir(), "/data/e.db.spool"; got != want {
		t.Errorf("SQLite spool = %s, want %s", got, want)
	}
	pg := func(u string) string { return (&globals{db: u}).spoolDir() }
	a := pg("postgres://root:s3cret-pw@db.example:5432/test?sslmode=disable&schema=prod")
	if filepath.Dir(a) != filepath.Join(state, "mcplife", "spool") || !strings.HasPrefix(filepath.Base(a), "postgres-") {
		t.Errorf("PostgreSQL spool = %s, want one in %s", a, filepath.Join(state, "mcplife", "spool"))
	}
	if strings.Contains(a, "s3cret") {
		t.Errorf("spool directory %s names the password", a)
	}
	if b := pg("postgres://root:other@db.example:5432/test?schema=prod"); b != a {
		t.Errorf("same store, other password and options: spool %s, want %s", b, a)
	}
	for _, other := range []string{
		"postgres://root@db.example:5432/test?schema=staging",
		"postgres://root@db.example:5433/test?schema=prod",
		"postgres://root@db.example:5432/other?schema=prod",
	} {
		if pg(other) == a {
			t.Errorf("%s shares the spool of another store", other)
		}
	}
}
