// Package sqlite is the SQLite event store of mcplife, built on
// github.com/mattn/go-sqlite3; it is the only package of the module that
// needs cgo. Code that does not open a database file depends on
// [github.com/mcplife/mcplife/store] only.
//
// The file is in WAL mode with synchronous=FULL (see [DB] for the
// durability guarantee). Its schema is embedded as numbered .sql files,
// applied in transactions and recorded in PRAGMA user_version; a file
// written by a newer version is refused with [store.ErrNewerSchema] and left
// untouched. Tables: events (one row per envelope, seq as rowid, time as
// Unix nanoseconds), streams (one summary row per stream) and snapshots.
//
// Example:
//
//	db, err := sqlite.Open("events.db", nil)
//	if err != nil { ... }
//	defer db.Close()
//	stored, err := db.Append(ctx, "session-1", store.NoStream, []events.Envelope{env})
//	...
//	for env, err := range db.ReadAll(ctx, 0) { ... }
//
// Tools that only inspect a file open it with Options{ReadOnly: true}: the
// file is then opened with mode=ro and never created, migrated or changed.
package sqlite
