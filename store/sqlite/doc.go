// Package sqlite is the SQLite event store of mcplife, built on
// github.com/mattn/go-sqlite3; it is the only package of the module that
// needs cgo. Code that does not open a database file depends on
// [github.com/mcplife/mcplife/store] only.
//
// The file is in WAL mode. Concurrent appends share transactions and
// their flush of the log (group commit, see [DB]). [Options.Durability]
// chooses what an acknowledged append survives: [Normal] (synchronous=NORMAL,
// the default) survives the process being killed, SIGKILL included, and may
// lose the last commits on a power loss or operating-system crash; [Full]
// (synchronous=FULL) flushes the log at every commit and survives those too.
// Normal is the default because the store is the audit log of agent
// sessions: the failure it must survive is the agent's own process dying
// mid-session, which Normal covers, while a power loss ends the session
// being recorded anyway and costs at most its last moments, never the
// file's consistency; in exchange no append waits for a disk flush on the
// manager's path. Choose Full when every acknowledged event must outlive
// the machine. Its schema is embedded as numbered .sql files,
// applied in transactions and recorded in PRAGMA user_version; a file
// written by a newer version is refused with [store.ErrNewerSchema] and left
// untouched. Tables: events (one row per envelope, seq as rowid, time as
// Unix nanoseconds, hash its chain value), streams (one summary row per
// stream, with its last event's chain value: the row with the highest
// last_seq holds the chain head), snapshots and store_identity.
//
// Every event carries its chain value (see package store for the
// definition), computed by the writer under the write lock that numbers
// the events, from the stored value of the event at the highest seq, and
// written in the same transaction; so is the chain head, by the statement
// that updates the stream's row. The migration that added the chain
// chained the events stored before it, in seq order.
// [DB.ReadChain] and [DB.ChainHead] read it back for verification.
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
// file is then opened with mode=ro and never created, migrated or changed
// (a file no process has open is read without creating -wal and -shm
// files beside it); a file an older version wrote is read as it is.
package sqlite
