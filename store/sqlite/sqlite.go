package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/groupcommit"
)

var (
	_ store.Store       = (*DB)(nil)
	_ store.TypeReader  = (*DB)(nil)
	_ store.Snapshotter = (*DB)(nil)
)

// Options configures [Open]. The zero value, like a nil *Options, means
// defaults.
type Options struct {
	// ReadOnly opens the file for reading only (SQLite mode=ro). The file
	// must exist; it is never created, migrated or switched to WAL, and
	// writes return [store.ErrReadOnly]. A file of an older schema is read
	// as it is (events recorded before host ids read as of no host).
	// Reading a file that no process has open creates no -wal or -shm
	// file beside it.
	ReadOnly bool
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection or process before failing with SQLITE_BUSY. Default 5s.
	BusyTimeout time.Duration
	// Logger receives migration and open/close messages. Default: discard.
	Logger *slog.Logger
	// Durability is how far an acknowledged Append is sure to survive.
	// Default [Normal]; see [DB] for what each level promises and costs.
	Durability Durability
}

// Durability is how far a committed write is sure to survive: a killed
// process, or also an operating-system crash or power loss.
type Durability string

const (
	// Normal runs the write-ahead log with synchronous=NORMAL: a commit
	// reaches the operating system before the Append returns, and the log
	// is flushed to stable storage at checkpoints. A killed process
	// (SIGKILL included) loses nothing acknowledged; a power loss or
	// operating-system crash may lose the last commits, never the file's
	// consistency.
	Normal Durability = "normal"
	// Full runs with synchronous=FULL: every commit flushes the log to
	// stable storage before the Append returns, so acknowledged events also
	// survive a power loss, provided the disk honours flushes.
	Full Durability = "full"
)

// synchronous returns the value of PRAGMA synchronous for d.
func (d Durability) synchronous() int {
	if d == Full {
		return 2
	}
	return 1
}

func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	var errs []error
	if c.BusyTimeout < 0 {
		errs = append(errs, fmt.Errorf("BusyTimeout %v is negative", c.BusyTimeout))
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch c.Durability {
	case "":
		c.Durability = Normal
	case Normal, Full:
	default:
		errs = append(errs, fmt.Errorf("Durability %q is neither %q nor %q", c.Durability, Normal, Full))
	}
	return c, errors.Join(errs...)
}

// DB is the SQLite event store: a [store.Store] and [store.Snapshotter]
// backed by one database file. All methods are safe for concurrent use,
// also from several processes on the same file.
//
// The file is in WAL mode, so readers never block the writer or each other.
// Appends go through a single writer connection and are committed in
// groups: an Append queues its events and waits; when the writer is free,
// one waiting Append takes every queued one and writes them in a single
// transaction (BEGIN IMMEDIATE, so the write lock is taken up front across
// processes), each in its own savepoint, and commits once. Appends that
// arrive while a commit is in flight therefore share the next commit and
// its flush; each still gets its own result, and one that fails (a version
// conflict) is rolled back to its savepoint without affecting the others.
// Sequence numbers are gapless and in commit order. An Append whose context
// is done before its transaction starts returns the context's error and
// stores nothing; once its transaction has started it returns nil when the
// transaction commits, or the transaction's error. Waiting for another
// process's write lock is bounded by [Options.BusyTimeout]. Reads use a
// separate pool of read-only connections and fetch pages of rows: an
// iteration holds no connection or lock while its loop body runs, so the
// body may append.
//
// # Durability
//
// An Append returns nil only after its transaction committed, so its events
// survive the process being killed at any point afterwards (SIGKILL
// included) at either [Options.Durability] level. With [Full] the commit
// also waited for the write-ahead log to reach stable storage, so they
// survive an operating-system crash or power loss too, provided the disk
// honours flushes. With [Normal], the default, a power loss may lose the
// last commits but never corrupts the file. The flush is what a commit
// costs (several times the rest of a single-event Append on a busy disk);
// group commit shares it among concurrent Appends, and a batched Append
// shares it among its events.
type DB struct {
	path     string // as given to Open, for messages
	readOnly bool
	id       string // the store's identity (see StoreID), set by Open
	log      *slog.Logger

	w     *sql.DB       // writer pool of one connection; nil when read-only
	wconn *sql.Conn     // that connection, held from Open to Close
	wsem  chan struct{} // holds a token while a write uses wconn
	r     *sql.DB       // readers: read-only connections

	stmts statements
	// wstmts are the append path's statements, on wconn's driver
	// connection.
	wstmts writerStmts

	// onDisk is the file's schema version as Open left it: older than
	// schemaVersion only for a file opened read-only.
	onDisk int

	// commits is the append path: it checks appends and queues them for
	// the next group transaction, written by writeGroup with the token in
	// wsem held.
	commits *groupcommit.Committer

	// tail is the last event the writer committed, used and set only by
	// writeGroup (see chainTail).
	tail chainTail
	// chain is the buffer of the chain values of the append being
	// written, used only by the writer (see rowChain).
	chain rowChain

	groupTxs atomic.Int64 // group transactions begun, for tests

	// testHookInTx, set before the first Append, runs in each group
	// transaction before its commit, and an error it returns fails the
	// transaction. (commits.TestHookQueued gets the queue's length after
	// each Append joins it.)
	testHookInTx func() error

	// mu guards closed. Every operation holds it for reading while it uses
	// the connections; Close takes it for writing, so it waits for
	// operations in flight and later ones see closed.
	mu     sync.RWMutex
	closed bool
}

// Open opens the event store in the SQLite file at path, creating the file
// and applying the embedded migrations unless opts.ReadOnly is set. It
// switches the file to WAL mode and checks that the switch took effect.
//
// Errors wrap [store.ErrNewerSchema] when the file was written by a newer
// schema version (the file is then left as it was), and, for a read-only
// open, [store.ErrNotFound] when the file does not exist.
func Open(path string, opts *Options) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: options: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db := &DB{path: path, readOnly: o.ReadOnly, log: o.Logger, wsem: make(chan struct{}, 1)}
	db.commits = groupcommit.New(groupcommit.Config{
		Store: "sqlite",
		Check: func(stream string, expected int64, envs []events.Envelope) error {
			return store.CheckAppend("sqlite", stream, expected, envs)
		},
		Acquire: func() error { return db.acquire(true) },
		Release: db.release,
		Sem:     db.wsem,
		Write:   db.writeGroup,
	})
	ctx := context.Background()

	// onDisk is the file's schema version as this open leaves it: a
	// read-only open reads an older file as it is.
	onDisk := schemaVersion
	_, statErr := os.Stat(abs)
	switch {
	case statErr == nil:
		// Check the schema version through a read-only connection first,
		// so a newer file is not touched at all (not even switched to WAL).
		v, err := db.checkVersion(ctx, abs, o)
		if err != nil {
			return nil, err
		}
		onDisk = v
	case !errors.Is(statErr, fs.ErrNotExist):
		return nil, fmt.Errorf("sqlite: open %s: %w", path, statErr)
	case o.ReadOnly:
		return nil, fmt.Errorf("sqlite: open %s read-only: %w", path, store.ErrNotFound)
	}

	if !o.ReadOnly {
		if err := db.openWriter(ctx, abs, o); err != nil {
			return nil, err
		}
	}
	db.r = openPool(readConnector(abs, o), max(4, runtime.GOMAXPROCS(0)))
	if o.ReadOnly && onDisk < schemaVersion {
		db.log.Debug("sqlite: reading an older schema as it is", "file", path, "version", onDisk)
	} else {
		onDisk = schemaVersion
	}
	db.onDisk = onDisk
	if err := db.stmts.prepareReads(ctx, db.r, onDisk); err != nil {
		db.closeAll()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := db.readIdentity(ctx, abs, onDisk); err != nil {
		db.closeAll()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.log.Debug("sqlite: opened", "file", path, "readOnly", o.ReadOnly)
	return db, nil
}

// checkVersion returns the existing file's schema version. It fails if
// the schema is newer than this package knows, or, for a read-only open,
// older than the oldest it can read without migrating (version 1: every
// later migration only adds an index or a column, which reads do
// without).
func (db *DB) checkVersion(ctx context.Context, abs string, o Options) (int, error) {
	pool := openPool(readConnector(abs, o), 1)
	defer pool.Close()
	v, err := userVersion(ctx, pool)
	if err != nil {
		return 0, fmt.Errorf("sqlite: open %s: read schema version: %w", db.path, mapErr(err))
	}
	if v > schemaVersion {
		return 0, db.newerSchema(v)
	}
	if o.ReadOnly && v < 1 {
		return 0, fmt.Errorf("sqlite: open %s read-only: schema version %d, want %d: open it read-write once to migrate it", db.path, v, schemaVersion)
	}
	return v, nil
}

func (db *DB) newerSchema(v int) error {
	return fmt.Errorf("sqlite: open %s: schema version %d, this program knows up to %d: %w", db.path, v, schemaVersion, store.ErrNewerSchema)
}

func (db *DB) openWriter(ctx context.Context, abs string, o Options) error {
	db.w = openPool(connector{dsn: dsn(abs, o, false), driver: &sqlite3.SQLiteDriver{}}, 1)
	fail := func(err error) error {
		db.closeAll()
		return err
	}
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return fail(fmt.Errorf("sqlite: open %s: %w", db.path, mapErr(err)))
	}
	db.wconn = conn

	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return fail(fmt.Errorf("sqlite: open %s: set WAL mode: %w", db.path, mapErr(err)))
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fail(fmt.Errorf("sqlite: open %s: read journal mode: %w", db.path, mapErr(err)))
	}
	if !strings.EqualFold(mode, "wal") {
		return fail(fmt.Errorf("sqlite: open %s: journal mode is %q after setting WAL (the file system may not support WAL's shared memory)", db.path, mode))
	}
	// The DSN sets synchronous on every connection; check that it holds.
	var sync int
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return fail(fmt.Errorf("sqlite: open %s: read synchronous: %w", db.path, mapErr(err)))
	}
	if want := o.Durability.synchronous(); sync != want {
		return fail(fmt.Errorf("sqlite: open %s: synchronous is %d, want %d (%s)", db.path, sync, want, o.Durability))
	}
	if err := db.migrate(ctx); err != nil {
		return fail(err)
	}
	if err := db.stmts.prepareWrites(ctx, conn); err != nil {
		return fail(fmt.Errorf("sqlite: open %s: %w", db.path, err))
	}
	if err := db.wstmts.prepare(ctx, conn); err != nil {
		return fail(fmt.Errorf("sqlite: open %s: %w", db.path, err))
	}
	return nil
}

// withWriter runs fn with exclusive use of the writer connection, waiting
// for it no longer than ctx allows. fn gets a context without ctx's
// cancellation: statements run to completion (they are short), which
// spares the driver a goroutine per statement to watch for cancellation.
// Requires a writable, open db (see acquire).
func (db *DB) withWriter(ctx context.Context, fn func(bg context.Context) error) error {
	select {
	case db.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-db.wsem }()
	return fn(context.WithoutCancel(ctx))
}

// writeTx runs fn in a write transaction on the writer connection and
// commits it if fn succeeds and ctx is still live; otherwise it rolls back.
func (db *DB) writeTx(ctx context.Context, fn func(bg context.Context) error) error {
	return db.withWriter(ctx, func(bg context.Context) error {
		return db.inTx(bg, func() error {
			if err := fn(bg); err != nil {
				return err
			}
			return ctx.Err()
		})
	})
}

// inTx runs fn in a transaction on the writer connection and commits it if
// fn succeeds; otherwise it rolls back. Requires the writer (see
// withWriter).
func (db *DB) inTx(bg context.Context, fn func() error) error {
	if _, err := db.wconn.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin: %w", mapErr(err))
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		// After a failed COMMIT SQLite may have rolled back already;
		// then this fails harmlessly.
		if _, err := db.wconn.ExecContext(bg, "ROLLBACK"); err != nil {
			db.log.Debug("sqlite: rollback", "file", db.path, "err", err)
		}
	}()
	if err := fn(); err != nil {
		return err
	}
	if _, err := db.wconn.ExecContext(bg, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", mapErr(err))
	}
	committed = true
	return nil
}

// dsn returns the data source name for a connection to the file at abs.
// Parameters starting with _ are go-sqlite3's; it applies them to every new
// connection. (Write transactions are begun explicitly with BEGIN
// IMMEDIATE, see writeTx, so they never fail half-way to upgrade a lock.)
func dsn(abs string, o Options, readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10))
	q.Set("_synchronous", strings.ToUpper(string(o.Durability)))
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Set("mode", "rwc")
	}
	// An SQLite URI: the path is percent-encoded so '?', '#' and '%' in
	// file names survive.
	return "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath() + "?" + q.Encode()
}

// connector opens go-sqlite3 connections without registering a driver name
// globally.
//
// A read-only store's connector has a snapshot DSN too. SQLite's reader
// of a WAL-mode file creates the -wal and -shm files beside it when they
// do not exist, and a read-only connection cannot remove them again, so
// merely inspecting a file would leave them behind. They are missing only
// when no connection has the file open (the last one to close checkpoints
// the log into the file and deletes both), and then the file holds every
// committed event: such a connection opens the file immutable, which
// creates nothing. Once a writer has opened the file (a -wal exists) or
// changed it (its size or modification time differ), a snapshot
// connection is not reused (see [snapshotConn]): its replacement reads
// the file as it is now, through the writer's -wal and -shm while there
// is one, so a reader that keeps polling sees the new events.
type connector struct {
	dsn      string
	snapshot string // read-only stores: the DSN used while there is no -wal
	path     string // the database file, for snapshot connections
	driver   *sqlite3.SQLiteDriver
}

// readConnector returns the connector of the read connections.
func readConnector(abs string, o Options) connector {
	c := connector{dsn: dsn(abs, o, true), driver: &sqlite3.SQLiteDriver{}}
	if o.ReadOnly {
		c.snapshot, c.path = c.dsn+"&immutable=1", abs
	}
	return c
}

func (c connector) Connect(context.Context) (driver.Conn, error) {
	if c.snapshot == "" {
		return c.driver.Open(c.dsn)
	}
	// Taken before the connection opens, so that any change after it
	// retires the connection.
	fi, err := os.Stat(c.path)
	if err != nil || fileExists(c.path+"-wal") {
		return c.driver.Open(c.dsn)
	}
	conn, err := c.driver.Open(c.snapshot)
	if err != nil {
		return nil, err
	}
	return snapshotConn{SQLiteConn: conn.(*sqlite3.SQLiteConn), path: c.path, file: fi}, nil
}

func (c connector) Driver() driver.Driver { return c.driver }

// snapshotConn is a connection that reads the file immutable: file is the
// file as it was when the connection opened, without a -wal. An immutable
// connection never looks for changes, so once a writer has the file open
// (its commits are in the -wal, which such a connection never reads) or
// has changed the file, the pool discards the connection (ResetSession
// before reuse, IsValid after use) and opens another. A query already
// running when a writer appears finishes on the file as it was, and may
// fail if the writer checkpoints into the file meanwhile.
type snapshotConn struct {
	*sqlite3.SQLiteConn
	path string
	file os.FileInfo
}

// current reports whether the file is as the connection found it.
func (c snapshotConn) current() bool {
	if fileExists(c.path + "-wal") {
		return false
	}
	fi, err := os.Stat(c.path)
	return err == nil && os.SameFile(fi, c.file) && fi.Size() == c.file.Size() && fi.ModTime().Equal(c.file.ModTime())
}

// ResetSession implements [driver.SessionResetter].
func (c snapshotConn) ResetSession(context.Context) error {
	if !c.current() {
		return driver.ErrBadConn
	}
	return nil
}

// IsValid implements [driver.Validator].
func (c snapshotConn) IsValid() bool { return c.current() }

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func openPool(c connector, conns int) *sql.DB {
	p := sql.OpenDB(c)
	p.SetMaxOpenConns(conns)
	p.SetMaxIdleConns(conns)
	p.SetConnMaxLifetime(0)
	p.SetConnMaxIdleTime(0)
	return p
}

// Path returns the path the store was opened with.
func (db *DB) Path() string { return db.path }

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
		return fmt.Errorf("%s opened read-only: %w", db.path, store.ErrReadOnly)
	}
	return nil
}

func (db *DB) release() { db.mu.RUnlock() }

// Close waits for operations in flight, then closes every connection; the
// last one checkpoints the write-ahead log into the file. Later calls to
// other methods return [store.ErrClosed]; closing again returns nil. It is
// safe to call concurrently.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	if err := db.closeAll(); err != nil {
		return fmt.Errorf("sqlite: close %s: %w", db.path, err)
	}
	db.log.Debug("sqlite: closed", "file", db.path)
	return nil
}

// closeAll closes the statements and both pools, readers first so that the
// writer is the last connection and checkpoints the log.
func (db *DB) closeAll() error {
	errs := []error{db.stmts.close(), db.wstmts.close(db.wconn)}
	if db.wconn != nil {
		errs = append(errs, db.wconn.Close())
	}
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	return errors.Join(errs...)
}

// IntegrityCheck runs PRAGMA integrity_check and returns an error listing
// the problems it reports, or nil when it reports "ok".
func (db *DB) IntegrityCheck(ctx context.Context) error {
	if err := db.acquire(false); err != nil {
		return fmt.Errorf("sqlite: integrity check: %w", err)
	}
	defer db.release()
	rows, err := db.r.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("sqlite: integrity check %s: %w", db.path, mapErr(err))
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return fmt.Errorf("sqlite: integrity check %s: %w", db.path, err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: integrity check %s: %w", db.path, mapErr(err))
	}
	if len(msgs) == 1 && msgs[0] == "ok" {
		return nil
	}
	return fmt.Errorf("sqlite: integrity check %s: %s", db.path, strings.Join(msgs, "; "))
}

// mapErr wraps driver errors that mean a store condition in the matching
// sentinel, matched by SQLite result code.
func mapErr(err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	switch {
	case se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey:
		// Another writer took the same version or sequence first.
		return fmt.Errorf("%w: %w", store.ErrVersionConflict, err)
	case se.Code == sqlite3.ErrReadonly:
		return fmt.Errorf("%w: %w", store.ErrReadOnly, err)
	}
	return err
}
