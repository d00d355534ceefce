package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/store"
)

var _ store.Identifier = (*DB)(nil)

// identityVersion is the schema version that made the store_identity table.
const identityVersion = 2

// StoreID implements [store.Identifier]: the random id the schema got when
// it was made (or migrated to version 2), combined with the names of its
// database and schema, read once by Open. So a database made from another
// as its template, or a schema restored under another name, is a store of
// its own. It is "" for a schema of an older version opened read-only.
func (db *DB) StoreID() string { return db.id }

// readIdentity reads the store's identity into db.id from a schema at
// version v (none before identityVersion).
func (db *DB) readIdentity(ctx context.Context, v int) error {
	if v < identityVersion {
		return nil
	}
	var database string
	err := db.pool.QueryRow(ctx, `SELECT id, current_database() FROM `+db.q.schema+`.store_identity`).Scan(&db.id, &database)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && db.id == "" {
		return fmt.Errorf("postgres: open schema %s: read store identity: table store_identity holds no id", db.schema)
	}
	if err != nil {
		return fmt.Errorf("postgres: open schema %s: read store identity: %w", db.schema, mapErr(err))
	}
	db.id = store.LocatedID(db.id, database+"\x00"+db.schema)
	return nil
}
