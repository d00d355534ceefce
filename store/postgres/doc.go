// Package postgres is the PostgreSQL event store of mcplife, built on
// github.com/jackc/pgx/v5: the store a fleet of hosts shares. Code that
// does not open a database depends on [github.com/mcplife/mcplife/store]
// only. It needs PostgreSQL 12 or later.
//
// # Gapless order across processes
//
// The global sequence is gapless and in commit order: a reader never sees
// seq N+1 before N. A PostgreSQL SEQUENCE cannot give that: numbers are
// taken outside the transaction, so a rolled-back append leaves a gap, and
// a transaction that took N may commit after the one that took N+1, so a
// reader would see N+1 first. Instead the last number handed out is kept in
// a one-row table, seq_counter. Every append transaction starts by locking
// that row (SELECT … FOR UPDATE) and holds the lock until it commits; under
// the lock it reads the stream's version (a fresh snapshot, which holds
// every append committed before), checks the expected version, moves the
// counter on by the number of its events and inserts them with those
// numbers. So appenders — in this process, in other processes, on other
// hosts — commit one at a time, in the order of the numbers they took. A
// rolled-back transaction rolls the counter back with it, so no number is
// lost. PostgreSQL makes a committed transaction visible before it
// releases its locks, so the next appender, and any reader that sees its
// events, already sees the previous one's. The cost is that commits to one
// schema are serialised; [DB] shares each commit among the appends a
// process makes meanwhile (group commit), and sends each transaction as
// one pipeline, one round trip, so the lock is held for little more than
// the commit's flush. Every append updates the counter row; PostgreSQL
// prunes the row's old versions only once no transaction can still see
// them, so a transaction left open for long elsewhere in the database
// slows appends down until it ends (the store's own transactions are
// short).
//
// # Schema
//
// The tables live in one PostgreSQL schema, [Options.Schema] (default
// "mcplife"), so several stores can share a database. Its layout is
// embedded as numbered .sql files, applied in transactions, each recorded
// in the schema's migrations table; the first read-write open creates the
// schema. Processes opening a new schema at once serialise on a
// transaction-scoped advisory lock and apply each migration once. A schema
// written by a newer version is refused with [store.ErrNewerSchema] and
// left untouched. Tables: events (one row per envelope; time as Unix
// nanoseconds, which timestamptz's microseconds could not hold; data as
// bytea, the envelope's bytes unchanged; host), streams (one summary row
// per stream), seq_counter and snapshots.
//
// # Durability
//
// An Append returns nil only after the server reported its commit; with
// PostgreSQL's default synchronous_commit=on the commit is then on the
// server's disk. The writing process being killed, or its connection
// being lost, never loses an acknowledged append: an Append in flight then
// returns an error, and the server either committed all of it or none.
//
// Example:
//
//	db, err := postgres.Open(ctx, "postgres://mcplife@db.internal/fleet", nil)
//	if err != nil { ... }
//	defer db.Close()
//	stored, err := db.Append(ctx, "session-1", store.NoStream, []events.Envelope{env})
//	...
//	for env, err := range db.ReadAll(ctx, 0) { ... }
//
// Tools that only inspect a store open it with Options{ReadOnly: true}: the
// schema is then never created, migrated or changed, and the connections
// run read-only.
//
// Tests find a server through [github.com/mcplife/mcplife/store/postgres/pgtest].
package postgres
