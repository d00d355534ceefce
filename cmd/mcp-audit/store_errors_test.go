package main

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/mcplife/mcplife/events"
)

// openRaw opens the file with the driver directly, as another program
// would.
func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db := sql.OpenDB(rawConnector{"file:" + path + "?_busy_timeout=10"})
	t.Cleanup(func() { db.Close() })
	return db
}

type rawConnector struct{ dsn string }

func (c rawConnector) Connect(context.Context) (driver.Conn, error) {
	return (&sqlite3.SQLiteDriver{}).Open(c.dsn)
}
func (c rawConnector) Driver() driver.Driver { return &sqlite3.SQLiteDriver{} }

func TestNewerSchemaIsRefusedAndUntouched(t *testing.T) {
	path := writeHistory(t, "s", &events.SessionStarted{Cwd: "/x"})
	raw := openRaw(t, path)
	if _, err := raw.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	before := fileBytes(t, path)
	for _, args := range [][]string{{"sessions"}, {"replay", "last"}, {"verify", "--all"}, {"run", "--once", "--cwd", t.TempDir()}} {
		code, _, errOut := runCmd(t, append([]string{"--db", path}, args...)...)
		if code != 2 || !strings.Contains(errOut, "newer") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if !bytes.Equal(before, fileBytes(t, path)) {
		t.Error("a newer database was modified")
	}
}

func TestLockedStoreGivesOneLineError(t *testing.T) {
	path := writeHistory(t, "s", &events.SessionStarted{Cwd: "/x"})
	raw := openRaw(t, path)
	conn, err := raw.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Another program holds an exclusive lock on the whole file.
	if _, err := conn.ExecContext(t.Context(), "PRAGMA locking_mode = EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	start := time.Now()
	code, _, errOut := runCmd(t, "--db", path, "sessions")
	if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, path) {
		t.Errorf("locked: exit %d, stderr %q (after %s)", code, errOut, time.Since(start))
	}
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}
