package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mcplife/mcplife/store"
)

var _ store.Identifier = (*DB)(nil)

// identityVersion is the schema version that made the store_identity table.
const identityVersion = 4

// StoreID implements [store.Identifier]: the random id the file got when
// its schema was made (or migrated to version 4), combined with the file's
// device and inode, read once by Open. So a copy of the file (a backup, a
// template every user starts from) is a store of its own, while every path
// to one file gives the same identity. It is "" for a file of an older
// schema opened read-only.
func (db *DB) StoreID() string { return db.id }

// readIdentity reads the store's identity into db.id from the file at path,
// at schema version v (none before identityVersion).
func (db *DB) readIdentity(ctx context.Context, path string, v int) error {
	if v < identityVersion {
		return nil
	}
	err := db.r.QueryRowContext(ctx, `SELECT id FROM store_identity WHERE one = 1`).Scan(&db.id)
	if errors.Is(err, sql.ErrNoRows) || err == nil && db.id == "" {
		return fmt.Errorf("read store identity: table store_identity holds no id")
	}
	if err != nil {
		return fmt.Errorf("read store identity: %w", mapErr(err))
	}
	db.id = store.LocatedID(db.id, fileKey(path))
	return nil
}
