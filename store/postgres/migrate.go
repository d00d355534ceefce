package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/migrations"
)

// migrationFS holds the schema, one file per version: NNNN_name.sql. Each
// runs with search_path set to the store's schema, so its names are
// unqualified.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// schemaMigrations returns the embedded migrations in version order, checking
// that their versions run 1, 2, 3, … without gaps (see [migrations.Load]).
func schemaMigrations() ([]migrations.Migration, error) {
	return migrations.Load("postgres", migrationFS, "migrations")
}

// schemaVersion is the schema version this package writes, the highest
// version recorded in the schema's migrations table.
var schemaVersion = func() int {
	ms, err := schemaMigrations()
	if err != nil {
		panic(err) // the embedded files are fixed at build time; a test covers them
	}
	return len(ms)
}()

// migrationSteps are the parts of migrations that SQL alone does not do,
// by version: each runs after its file, in the same transaction.
var migrationSteps = map[int]func(db *DB, ctx context.Context, tx pgx.Tx) error{
	chainVersion: (*DB).chainHistory,
}

// querier is a pool, a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// currentVersion returns the schema version recorded in the store's schema:
// 0 when the schema or its migrations table does not exist. It only reads.
func (db *DB) currentVersion(ctx context.Context, q querier) (int, error) {
	// The catalog is read with a query, under the statement's snapshot:
	// name look-ups such as to_regclass go through the backend's catalog
	// cache, which inside a transaction that began before another process
	// created the table (as one waiting for the migration lock did) may
	// not know of it yet.
	var exists bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = 'migrations')`, db.schema).Scan(&exists)
	if err != nil {
		return 0, mapErr(err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM `+db.q.schema+`.migrations`).Scan(&v); err != nil {
		return 0, mapErr(err)
	}
	return v, nil
}

// migrate applies every migration newer than the schema's version, each in
// its own transaction together with its row in the migrations table, so a
// crash leaves the schema at one version or the next. Each transaction
// first takes a transaction-scoped advisory lock named after the schema and
// reads the version again under it, so processes opening the same new
// schema at once apply each migration exactly once, one after another; the
// first one also creates the schema and the migrations table.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := schemaMigrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		applied, err := db.applyMigration(ctx, m, schemaVersion)
		if err != nil {
			return err
		}
		if applied {
			db.log.Info("postgres: migrated", "schema", db.schema, "version", m.Version, "migration", m.Name)
		}
	}
	return nil
}

// migrationLockKey is the key of the advisory lock that serialises the
// migrations of one schema, derived from its name.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("mcplife/store/postgres migrate\x00" + schema))
	return int64(h.Sum64())
}

// applyMigration applies m unless the schema is at its version already.
// latest is the newest version the caller knows; a schema beyond it is an
// error wrapping [store.ErrNewerSchema], and the transaction is rolled back
// having changed nothing.
func (db *DB) applyMigration(ctx context.Context, m migrations.Migration, latest int) (bool, error) {
	applied := false
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey(db.schema)); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		cur, err := db.currentVersion(ctx, tx)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if cur > latest {
			return db.newerSchema(cur)
		}
		if cur >= m.Version {
			return nil
		}
		if cur == 0 {
			if err := db.bootstrap(ctx, tx); err != nil {
				return err
			}
		}
		// SET LOCAL lasts until the end of this transaction.
		if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+db.q.schema); err != nil {
			return fmt.Errorf("set search_path: %w", err)
		}
		// Without arguments, pgx sends the file as one simple query, so it
		// may hold several statements.
		if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if step := migrationSteps[m.Version]; step != nil {
			if err := step(db, ctx, tx); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+db.q.schema+`.migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("record version: %w", err)
		}
		applied = true
		return nil
	})
	if errors.Is(err, store.ErrNewerSchema) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("postgres: migrate schema %s to %d: %w", db.schema, m.Version, mapErr(err))
	}
	return applied, nil
}

// bootstrap creates the schema, unless it exists, and the migrations table
// in it. Requires the migration lock (see applyMigration).
func (db *DB) bootstrap(ctx context.Context, tx pgx.Tx) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)`, db.schema).Scan(&exists); err != nil {
		return fmt.Errorf("look up schema: %w", err)
	}
	if !exists {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+db.q.schema); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	// The migrations table is the one table outside the numbered files: it
	// is how the version is told.
	_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+db.q.schema+`.migrations (
		version integer     PRIMARY KEY,
		name    text        NOT NULL,
		applied timestamptz NOT NULL DEFAULT now()
	)`)
	if err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	return nil
}
