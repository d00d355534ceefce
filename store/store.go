// Package store defines the event store that mcplife persists every
// lifecycle event to, its sentinel errors, and the optional capabilities a
// backend may offer. It needs no cgo: [github.com/mcplife/mcplife/store/sqlite]
// and [github.com/mcplife/mcplife/store/memory] implement it, and
// [github.com/mcplife/mcplife/store/storetest] holds the conformance suite
// every backend passes.
//
// # The hash chain
//
// Every event a durable store holds carries a chain value: a SHA-256 hash
// over the chain value of the event before it in the global log and the
// event's own canonical bytes, so that an event changed, removed, inserted
// or moved after it was written breaks the chain at that point. The value
// of event n is
//
//	h(n) = SHA-256( h(n-1) || be64(seq) || be64(version) || digest )
//
// where h(0) is 32 zero bytes, be64 is an 8-byte big-endian unsigned
// integer, and digest is the SHA-256 of the event's content: its stored
// fields other than seq and version, in this order, each integer as 8
// big-endian bytes (two's complement) and each text or byte string as its
// length in 8 big-endian bytes followed by its bytes:
//
//	stream, type, schema (integer), time (Unix nanoseconds, integer),
//	session id, correlation id, host, data
//
// (data is the stored JSON payload, byte for byte). The 48 bytes after
// h(n-1) are the event's canonical bytes: every stored field is covered,
// the content through its digest ([ChainHash] computes h(n)). The digest leaves out seq and version
// because a store may learn them only under the lock that orders its
// appends (PostgreSQL computes the last step in SQL, with its sha256
// function); everything else is known before.
//
// A store keeps the chain value of its last event beside the log as its
// chain head, written in the same transaction as the events, so that a
// log cut short at its end is told from a complete one. A store that
// keeps the chain is a [ChainReader]; package
// [github.com/mcplife/mcplife/verify] checks it.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"iter"
	"time"

	"github.com/mcplife/mcplife/events"
)

// Sentinel errors. Backends wrap them with %w.
var (
	// ErrVersionConflict: the stream's current version differs from the
	// expected version passed to Append.
	ErrVersionConflict = errors.New("store: version conflict")
	// ErrNotFound: the stream, snapshot or row does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrReadOnly: the store was opened read-only and a write was attempted.
	ErrReadOnly = errors.New("store: read-only")
	// ErrNewerSchema: the database was written by a newer version.
	ErrNewerSchema = errors.New("store: database schema is newer than this program")
)

// Expected-version values for Append.
const (
	// AnyVersion appends whatever the stream's current version is.
	AnyVersion int64 = -1
	// NoStream expects the stream not to exist yet.
	NoStream int64 = 0
)

// Store is an append-only event store with one global, gapless order.
//
// All methods are safe for concurrent use. Reads are iterators: they stop
// with the context's error when it is cancelled, and an iteration that ends
// early releases its resources.
type Store interface {
	// Append appends envs to stream atomically, in order. expected is the
	// stream's version before the append (NoStream for a new stream) or
	// AnyVersion. It assigns Seq (global, gapless, increasing in commit
	// order), Version (per stream, starting at 1) and Stream, and returns the
	// stored envelopes. On a mismatch it returns an error wrapping
	// ErrVersionConflict and stores nothing. When Append returns nil the
	// events are durable to the degree the backend documents.
	Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error)

	// ReadStream yields the events of stream with Version >= fromVersion, in
	// version order. A stream that does not exist yields nothing.
	ReadStream(ctx context.Context, stream string, fromVersion uint64) iter.Seq2[events.Envelope, error]

	// ReadAll yields every event with Seq >= fromSeq, in sequence order.
	ReadAll(ctx context.Context, fromSeq uint64) iter.Seq2[events.Envelope, error]

	// Streams yields a summary of every stream, oldest first.
	Streams(ctx context.Context) iter.Seq2[StreamInfo, error]

	// LastSeq returns the highest sequence stored (0 when empty).
	LastSeq(ctx context.Context) (uint64, error)

	// Close releases the store. It is idempotent; calls after Close return
	// ErrClosed.
	Close() error
}

// StreamInfo summarises one stream.
type StreamInfo struct {
	Stream   string
	Version  uint64    // number of events
	FirstSeq uint64    // sequence of its first event
	LastSeq  uint64    // sequence of its last event
	Created  time.Time // time of its first event
	Updated  time.Time // time of its last event
}

// TypeReader is an optional capability: a store that reads the events of
// one type without scanning the others (an index on type), so a projection
// that folds one event type catches up in time proportional to those
// events, not to the history. Callers find it by type assertion.
type TypeReader interface {
	// ReadType yields every event of type typ with Seq >= fromSeq and
	// Seq <= toSeq, in sequence order.
	ReadType(ctx context.Context, typ string, fromSeq, toSeq uint64) iter.Seq2[events.Envelope, error]
}

// Snapshotter is an optional capability: a store that can keep named
// projection checkpoints next to the events. Callers find it by type
// assertion. A checkpoint records the sequence it is current up to, so a
// reader loads it and catches up from Seq+1 instead of replaying history.
type Snapshotter interface {
	// SaveSnapshot stores data as the checkpoint name, current up to seq. A
	// save whose seq is lower than the stored one is ignored (a late, older
	// write never wins).
	SaveSnapshot(ctx context.Context, name string, seq uint64, data []byte) error
	// LoadSnapshot returns the checkpoint name, or an error wrapping
	// ErrNotFound.
	LoadSnapshot(ctx context.Context, name string) (seq uint64, data []byte, err error)
}

// Identifier is an optional capability: a store that knows its own
// identity, a random id created with its storage (its SQLite file, its
// PostgreSQL schema) and kept there, so that two stores never share one
// even when their sequences do. Callers find it by type assertion. A bus
// carries the identity on every message, so a subscriber tells its own
// store's events from another store's on the same topic. A copy of a
// store (a copied SQLite file, a PostgreSQL database made from another as
// its template, a schema restored under another name) has an identity of
// its own (see [LocatedID]).
type Identifier interface {
	// StoreID returns the store's identity: lower-case hex digits, the
	// same for every process that opens the storage. It is "" for a store
	// that has none yet (a file of an older schema opened read-only: the
	// first read-write open gives it one). It does not block.
	StoreID() string
}

// LocatedID returns the identity of a store whose storage holds the random
// id and is found at where (a SQLite file's device and inode, a
// PostgreSQL database and schema): the id itself when where is "", else 32
// lower-case hex digits of a digest of both. A copy of the storage
// elsewhere keeps the id but not the place, so it gets an identity of its
// own, and its sequences, which start where the original's were, are
// never taken for the original's on a bus.
func LocatedID(id, where string) string {
	if id == "" || where == "" {
		return id
	}
	sum := sha256.Sum256([]byte(id + "\x00" + where))
	return hex.EncodeToString(sum[:16])
}

// ID returns st's identity when it is an [Identifier], else "".
func ID(st Store) string {
	if id, ok := st.(Identifier); ok {
		return id.StoreID()
	}
	return ""
}

// AppendRequest is one append of a batch: the arguments of [Store.Append].
type AppendRequest struct {
	Stream   string
	Expected int64
	Envs     []events.Envelope
}

// AppendResult is the outcome of one [AppendRequest]: what [Store.Append]
// would have returned for it.
type AppendResult struct {
	Envs []events.Envelope
	Err  error
}

// BatchAppender is an optional capability: a store that appends several
// requests, to any streams, in one commit. Each request is checked and
// applied as [Store.Append] would, atomically on its own: one that fails
// (a version conflict, say) stores nothing and the others go on. Requests
// are applied in order, so their sequences ascend with their index. The
// results are parallel to reqs. A journal writing many small appends at
// once uses it to pay for one commit instead of one per append.
type BatchAppender interface {
	AppendBatch(ctx context.Context, reqs []AppendRequest) []AppendResult
}
