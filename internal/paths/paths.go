// Package paths names the places mcplife keeps its state for a user who
// named none: the default event store, which `mcp-audit` reads and writes
// and into which an embedded session records when given no journal, and
// the state directory around it.
package paths

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// StoreEnv is the environment variable that names the default event store
// instead of the file in the state directory. `mcp-audit` also takes a
// postgres:// URL there.
const StoreEnv = "MCP_AUDIT_DB"

// StoreFile is the name of the default event store in the state directory.
const StoreFile = "events.db"

// StateDir returns mcplife's state directory: $XDG_STATE_HOME/mcplife
// when XDG_STATE_HOME is an absolute path (a relative one is ignored, as
// the XDG base directory rules say), else ~/.local/state/mcplife. It fails
// only when neither is set and there is no home directory.
func StateDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "mcplife"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	if home == "" {
		return "", errors.New("no home directory")
	}
	return filepath.Join(home, ".local", "state", "mcplife"), nil
}

// DefaultStore returns where the default event store is: $MCP_AUDIT_DB
// when set (a SQLite file, or for `mcp-audit` a postgres:// URL), else
// events.db in [StateDir].
func DefaultStore() (string, error) {
	if p := os.Getenv(StoreEnv); p != "" {
		return p, nil
	}
	return StateStore()
}

// StateStore returns the default event store's file in [StateDir],
// whatever $MCP_AUDIT_DB says.
func StateStore() (string, error) {
	dir, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, StoreFile), nil
}

// IsPostgres reports whether a store's name is a PostgreSQL connection URL
// rather than a SQLite file.
func IsPostgres(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}
