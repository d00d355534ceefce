package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"

	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/migrations"
)

// migrationFS holds the schema, one file per version: NNNN_name.sql.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// schemaMigrations returns the embedded migrations in version order, checking
// that their versions run 1, 2, 3, … without gaps (see [migrations.Load]).
func schemaMigrations() ([]migrations.Migration, error) {
	return migrations.Load("sqlite", migrationFS, "migrations")
}

// schemaVersion is the schema version this package writes, recorded in the
// database's PRAGMA user_version.
var schemaVersion = func() int {
	ms, err := schemaMigrations()
	if err != nil {
		panic(err) // the embedded files are fixed at build time; a test covers them
	}
	return len(ms)
}()

// migrationSteps are the parts of migrations that SQL cannot do, by
// version: each runs after its file, in the same transaction.
var migrationSteps = map[int]func(db *DB, ctx context.Context) error{
	chainVersion: (*DB).chainHistory,
}

func userVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// migrate applies every migration newer than the database's user_version,
// each in its own write transaction together with the user_version update,
// so a crash leaves the database at one version or the next. The version is
// read again inside each transaction, so two processes opening the same new
// file do not both apply a migration.
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
			db.log.Info("sqlite: migrated", "file", db.path, "version", m.Version, "migration", m.Name)
		}
	}
	return nil
}

// applyMigration applies m unless the database is at its version already.
// latest is the newest version the caller knows; a database beyond it is an
// error wrapping [store.ErrNewerSchema].
func (db *DB) applyMigration(ctx context.Context, m migrations.Migration, latest int) (bool, error) {
	applied := false
	err := db.writeTx(ctx, func(bg context.Context) error {
		cur, err := userVersion(bg, db.wconn)
		if err != nil {
			return fmt.Errorf("read user_version: %w", err)
		}
		if cur > latest {
			return db.newerSchema(cur)
		}
		if cur >= m.Version {
			return nil
		}
		if _, err := db.wconn.ExecContext(bg, m.SQL); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if step := migrationSteps[m.Version]; step != nil {
			if err := step(db, bg); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
		}
		// PRAGMA takes no parameters; m.Version is an int from the file name.
		if _, err := db.wconn.ExecContext(bg, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
			return fmt.Errorf("set user_version: %w", err)
		}
		applied = true
		return nil
	})
	if errors.Is(err, store.ErrNewerSchema) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: migrate %s to %d: %w", db.path, m.Version, err)
	}
	return applied, nil
}
