package session

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/mcplife/mcplife/internal/paths"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/sqlite"
)

// defaultJournal is the journal on the default event store that a session
// given no journal opens, and owns.
type defaultJournal struct {
	j     *journal.Journal
	close func() error // the journal, then the store; idempotent
}

// openDefaultJournal opens the default event store ([paths.DefaultStore])
// for writing, creating it and its directory when missing, and a journal
// on it as `mcp-audit run` opens one: host id from $MCPLIFE_HOST when
// set, and a spool beside the file, shared with every host of that file.
func openDefaultJournal(log *slog.Logger) (*defaultJournal, error) {
	path, err := paths.DefaultStore()
	if err != nil {
		return nil, fmt.Errorf("session: no journal given and no default event store: %w", err)
	}
	if paths.IsPostgres(path) {
		return nil, fmt.Errorf("session: no journal given, and $%s names a PostgreSQL store: open it with store/postgres and pass a journal on it", paths.StoreEnv)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("session: default event store: %w", err)
	}
	db, err := sqlite.Open(path, &sqlite.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("session: default event store: %w", err)
	}
	j, err := journal.New(db, &journal.Options{Host: os.Getenv("MCPLIFE_HOST"), Logger: log, Spool: path + ".spool"})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("session: journal on %s: %w", path, err)
	}
	return &defaultJournal{j: j, close: sync.OnceValue(func() error {
		return errors.Join(j.Close(), db.Close())
	})}, nil
}
