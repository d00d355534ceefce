//go:build sqlitebench

package manager

import (
	"path/filepath"
	"testing"

	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/sqlite"
)

func init() {
	benchStores["sqlite"] = func(b *testing.B) store.Store {
		db, err := sqlite.Open(filepath.Join(b.TempDir(), "events.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
}
