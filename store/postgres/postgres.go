package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/groupcommit"
)

var (
	_ store.Store         = (*DB)(nil)
	_ store.TypeReader    = (*DB)(nil)
	_ store.Snapshotter   = (*DB)(nil)
	_ store.BatchAppender = (*DB)(nil)
)

// DefaultSchema is the PostgreSQL schema the store's tables live in when
// [Options.Schema] is empty.
const DefaultSchema = "mcplife"

// Options configures [Open]. The zero value, like a nil *Options, means
// defaults.
type Options struct {
	// Schema is the PostgreSQL schema (namespace) that holds the store's
	// tables; several stores can share a database under different schemas.
	// Default [DefaultSchema]. It is created on the first read-write open.
	Schema string
	// ReadOnly opens the store for reading only: the schema must exist; it
	// is never created or migrated (a schema of an older version is read
	// as it is, without a store identity), the connections run with
	// default_transaction_read_only, and writes return [store.ErrReadOnly].
	ReadOnly bool
	// LockTimeout bounds how long a statement waits for a lock held by
	// another connection or process (PostgreSQL's lock_timeout): an append
	// waiting for another writer's commit, a migration waiting for another
	// process's. An append transaction reaches the server whole, in one
	// round trip, so a writer that dies holds no lock once the server has
	// its transaction; one whose host vanishes while its statements are in
	// transit holds the lock until the server finds the connection dead
	// (its tcp_keepalives settings). Default 10s.
	LockTimeout time.Duration
	// MaxConns is the size of the connection pool. Default 4.
	MaxConns int32
	// Logger receives migration and open/close messages. Default: discard.
	Logger *slog.Logger
}

// maxIdentifier is PostgreSQL's limit on the length of a name, in bytes;
// longer names are silently truncated by the server, so they are refused.
const maxIdentifier = 63

func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	var errs []error
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if len(c.Schema) > maxIdentifier || strings.ContainsRune(c.Schema, 0) || !utf8.ValidString(c.Schema) {
		errs = append(errs, fmt.Errorf("Schema %q is not a valid PostgreSQL name (at most %d bytes of UTF-8, no NUL)", c.Schema, maxIdentifier))
	}
	if c.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("LockTimeout %v is negative", c.LockTimeout))
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = 10 * time.Second
	}
	if c.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("MaxConns %d is negative", c.MaxConns))
	}
	if c.MaxConns == 0 {
		c.MaxConns = 4
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, errors.Join(errs...)
}

// DB is the PostgreSQL event store: a [store.Store], [store.TypeReader],
// [store.Snapshotter] and [store.BatchAppender] backed by the tables of
// one schema. All methods are safe for concurrent use, also from several
// processes and hosts on the same schema.
//
// # Order
//
// Every append transaction first locks the one row of the seq_counter
// table and holds that lock until it commits; it then reads the stream's
// version, takes its sequence numbers from the counter and inserts its
// events. The lock serialises appenders across every connection, process
// and host, so sequence numbers are handed out in commit order: the
// transaction holding seq N+1 could only take the lock after the one
// holding N had committed (or rolled back, returning its numbers, so
// there is never a gap). PostgreSQL makes a transaction visible before it
// releases its row locks, so a reader that sees seq N+1 sees N too.
//
// # Group commit
//
// Within a process, an Append queues its events and waits; when no other
// group is being written, one waiting Append takes every queued one and
// writes them in a single transaction, sent as one pipeline of statements
// (one round trip): the counter lock, then one statement per append that
// checks its expected version and inserts its rows, or inserts nothing on
// a version conflict without disturbing the others. Appends that arrive
// while a commit is in flight share the next commit and its flush of the
// write-ahead log; each still gets its own result. Should the server
// refuse the data of one append in the group (a row written behind the
// store's back holding its version, say), it rolls back the whole group;
// the appends are then written again one transaction each, so only the
// append at fault fails. Any other failure (a lost connection, a lock
// timeout) fails every append of the group. An Append whose context is
// done before its group is taken returns the context's error and stores
// nothing; once taken, it returns nil when the transaction commits, or an
// error.
//
// # Durability and lost connections
//
// An Append returns nil only after the server reported its commit, which
// with PostgreSQL's default synchronous_commit=on means the commit reached
// the server's write-ahead log on disk. If the connection is lost while an
// append is in flight, the Append returns an error: the server then either
// committed it (it is in the store, unacknowledged) or rolled it back
// (nothing of it is). Nothing acknowledged is ever lost, and the pool
// replaces the lost connection for later calls.
//
// # Reads
//
// Reads fetch pages of rows, each in one query on a pooled connection: an
// iteration holds no connection or lock while its loop body runs, so the
// body may append.
type DB struct {
	schema   string // as given, for messages and the migration lock
	readOnly bool
	id       string // the store's identity (see StoreID), set by Open
	onDisk   int    // the schema's version as Open left it: older only when read-only
	log      *slog.Logger
	pool     *pgxpool.Pool
	q        queries

	// commits is the append path: it checks appends and queues them for
	// the next group transaction, written by writeGroup, one group at a
	// time.
	commits *groupcommit.Committer

	groupTxs atomic.Int64 // group transactions written, for tests

	// testHookBeforeSend, set before the first Append, runs in each group
	// transaction before its statements are sent, with the connection they
	// will be sent on. (commits.TestHookQueued gets the queue's length
	// after each Append joins it.)
	testHookBeforeSend func(conn *pgx.Conn)

	// mu guards closed. Every operation holds it for reading while it uses
	// the pool; Close takes it for writing, so it waits for operations in
	// flight and later ones see closed.
	mu     sync.RWMutex
	closed bool
}

// Open connects to the PostgreSQL database that connString names (a URL
// or key=value string, as [pgxpool.ParseConfig] takes it) and opens the
// event store in the schema of opts. Unless opts.ReadOnly is set, it
// creates the schema and applies the embedded migrations as needed; two
// processes opening the same new schema at once apply each migration
// once. ctx bounds the opening only.
//
// Errors wrap [store.ErrNewerSchema] when the schema was written by a newer
// version (it is then left as it was), and, for a read-only open,
// [store.ErrNotFound] when the schema holds no store.
func Open(ctx context.Context, connString string, opts *Options) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("postgres: open: options: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// pgx's message shows the string with its password blanked out.
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	cfg.MaxConns = o.MaxConns
	cfg.MinConns = 0
	params := cfg.ConnConfig.RuntimeParams
	// Every statement takes a fresh snapshot, so an append's version check
	// sees every append committed before it took the counter lock,
	// whatever the server's default isolation.
	params["default_transaction_isolation"] = "read committed"
	params["lock_timeout"] = strconv.FormatInt(o.LockTimeout.Milliseconds(), 10)
	// Every query of the store has one right plan (an index scan, or the
	// append's inserts), so it is planned once per connection: left to
	// choose, the server plans the append statement afresh each time it
	// runs, which doubled its cost.
	params["plan_cache_mode"] = "force_generic_plan"
	// Every statement of the store is short; compiling one with JIT, which
	// the server may choose for the append's recursive chain step from its
	// row estimates, took a thousand times longer than running it.
	params["jit"] = "off"
	if params["application_name"] == "" {
		params["application_name"] = "mcplife"
	}
	if o.ReadOnly {
		params["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	db := &DB{
		schema:   o.Schema,
		readOnly: o.ReadOnly,
		log:      o.Logger,
		pool:     pool,
		q:        newQueries(o.Schema),
	}
	db.commits = groupcommit.New(groupcommit.Config{
		Store:   "postgres",
		Check:   checkAppend,
		Acquire: func() error { return db.acquire(true) },
		Release: db.release,
		Sem:     make(chan struct{}, 1), // held while a group is being written
		Write:   db.writeGroup,
	})
	if err := db.open(ctx, o); err != nil {
		pool.Close()
		return nil, err
	}
	db.log.Debug("postgres: opened", "schema", db.schema, "readOnly", o.ReadOnly)
	return db, nil
}

// open checks the schema version and migrates when it is behind.
func (db *DB) open(ctx context.Context, o Options) error {
	// Read the version first, without taking a lock or writing anything,
	// so a schema at a newer version is not touched at all, and a current
	// one is opened without a write.
	v, err := db.currentVersion(ctx, db.pool)
	if err != nil {
		return fmt.Errorf("postgres: open schema %s: read schema version: %w", db.schema, err)
	}
	switch {
	case v > schemaVersion:
		return db.newerSchema(v)
	case v == schemaVersion:
	case o.ReadOnly && v == 0:
		return fmt.Errorf("postgres: open schema %s read-only: %w", db.schema, store.ErrNotFound)
	case o.ReadOnly:
		// Every migration after the first only adds the store's identity
		// or the hash chain, which reads other than the chain's do
		// without: an older schema is read as it is.
		db.log.Debug("postgres: reading an older schema as it is", "schema", db.schema, "version", v)
	default:
		if err := db.migrate(ctx); err != nil {
			return err
		}
		v = schemaVersion
	}
	db.onDisk = v
	return db.readIdentity(ctx, v)
}

func (db *DB) newerSchema(v int) error {
	return fmt.Errorf("postgres: open schema %s: schema version %d, this program knows up to %d: %w", db.schema, v, schemaVersion, store.ErrNewerSchema)
}

// Schema returns the PostgreSQL schema the store's tables are in.
func (db *DB) Schema() string { return db.schema }

// acquire checks that db is open and holds it open until release. Writes
// also fail on a read-only store. Callers wrap its error with what they
// were doing.
func (db *DB) acquire(write bool) error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return store.ErrClosed
	}
	if write && db.readOnly {
		db.mu.RUnlock()
		return fmt.Errorf("schema %s opened read-only: %w", db.schema, store.ErrReadOnly)
	}
	return nil
}

func (db *DB) release() { db.mu.RUnlock() }

// Close waits for operations in flight, then closes every connection of
// the pool. Later calls to other methods return [store.ErrClosed]; closing
// again returns nil. It is safe to call concurrently.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	db.pool.Close()
	db.log.Debug("postgres: closed", "schema", db.schema)
	return nil
}

// IntegrityCheck checks that the stored log is whole: sequences run from 1
// to the counter without a gap, and each stream's summary row agrees with
// its events (versions 1 to n, first and last sequence). It reads every
// row, so its cost grows with the history. It returns an error naming the
// problems it finds, or nil.
func (db *DB) IntegrityCheck(ctx context.Context) error {
	if err := db.acquire(false); err != nil {
		return fmt.Errorf("postgres: integrity check: %w", err)
	}
	defer db.release()
	fail := func(err error) error {
		return fmt.Errorf("postgres: integrity check of schema %s: %w", db.schema, mapErr(err))
	}
	var problems []string
	// One transaction, so that both checks read the same snapshot.
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var count, minSeq, maxSeq, counter int64
		if err := tx.QueryRow(ctx, db.q.checkSeqs).Scan(&count, &minSeq, &maxSeq, &counter); err != nil {
			return err
		}
		if count != maxSeq || (count > 0 && minSeq != 1) || counter != maxSeq {
			problems = append(problems, fmt.Sprintf("%d events with seqs %d to %d, counter at %d", count, minSeq, maxSeq, counter))
		}
		rows, err := tx.Query(ctx, db.q.checkStreams)
		if err != nil {
			return err
		}
		bad, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, s := range bad {
			problems = append(problems, fmt.Sprintf("stream %q: summary and events disagree", s))
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("postgres: integrity check of schema %s: %s", db.schema, strings.Join(problems, "; "))
	}
	return nil
}

// PostgreSQL error codes the store tells apart.
const (
	codeUniqueViolation = "23505"
	codeReadOnlyTx      = "25006"
)

// mapErr wraps driver errors that mean a store condition in the matching
// sentinel, matched by SQLSTATE code.
func mapErr(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case codeUniqueViolation:
		// Another writer took the same version or sequence first.
		return fmt.Errorf("%w: %w", store.ErrVersionConflict, err)
	case codeReadOnlyTx:
		return fmt.Errorf("%w: %w", store.ErrReadOnly, err)
	}
	return err
}

// refusedData reports whether err is the server refusing the data of a
// statement (SQLSTATE class 22, data exception, or 23, integrity
// constraint violation), such as a row written behind the store's back
// that holds the version an append wants. The transaction was then rolled
// back, and the same statements without the one at fault would succeed. A
// lost connection leaves the outcome of a commit unknown, and a lock
// timeout or a server shutting down would fail the same statements again,
// so those are not refusals.
func refusedData(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	sev := pe.SeverityUnlocalized
	if sev == "" {
		sev = pe.Severity
	}
	return sev == "ERROR" && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23"))
}
