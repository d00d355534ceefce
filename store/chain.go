package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"iter"

	"github.com/mcplife/mcplife/events"
)

// ChainHashSize is the size of a chain value.
const ChainHashSize = sha256.Size

// ContentDigest returns the SHA-256 digest of e's content, the fields of
// the chain's canonical bytes other than seq and version (see
// [ChainHash]). It does not allocate for payloads of up to a few hundred
// bytes.
func ContentDigest(e events.Envelope) [ChainHashSize]byte {
	var arr [512]byte
	return sha256.Sum256(appendContent(arr[:0], e))
}

// appendContent appends the canonical content bytes of e to b.
func appendContent(b []byte, e events.Envelope) []byte {
	str := func(b []byte, s string) []byte {
		return append(binary.BigEndian.AppendUint64(b, uint64(len(s))), s...)
	}
	b = str(b, e.Stream)
	b = str(b, e.Type)
	b = binary.BigEndian.AppendUint64(b, uint64(int64(e.Schema)))
	b = binary.BigEndian.AppendUint64(b, uint64(e.Time.UnixNano()))
	b = str(b, e.SessionID)
	b = str(b, e.CorrelationID)
	b = str(b, e.Host)
	b = binary.BigEndian.AppendUint64(b, uint64(len(e.Data)))
	return append(b, e.Data...)
}

// ChainStep returns the chain value of the event at seq with version and
// content digest, following the chain value prev of the event before it.
func ChainStep(prev [ChainHashSize]byte, seq, version uint64, digest [ChainHashSize]byte) [ChainHashSize]byte {
	var b [2*ChainHashSize + 16]byte
	copy(b[:], prev[:])
	binary.BigEndian.PutUint64(b[ChainHashSize:], seq)
	binary.BigEndian.PutUint64(b[ChainHashSize+8:], version)
	copy(b[ChainHashSize+16:], digest[:])
	return sha256.Sum256(b[:])
}

// ChainHash returns the chain value of e, stored with its Seq and Version,
// following prev, the chain value of the event before it (zero for the
// first event of a log).
func ChainHash(prev [ChainHashSize]byte, e events.Envelope) [ChainHashSize]byte {
	return ChainStep(prev, e.Seq, e.Version, ContentDigest(e))
}

// ChainedEvent is an event as stored, with the chain value stored beside
// it. Hash is nil for a row that has none (one written behind the store's
// back).
type ChainedEvent struct {
	Env  events.Envelope
	Hash []byte
}

// ChainHead is what a store records beside its log about the log's end:
// the sequence of the last event appended and its chain value. Both are
// zero for an empty log.
type ChainHead struct {
	Seq  uint64
	Hash []byte
}

// ChainReader is an optional capability: a store that keeps the hash
// chain over its log and reads it back for verification. Callers find it
// by type assertion.
type ChainReader interface {
	// ReadChain yields every event with Seq >= fromSeq with the chain
	// value stored beside it, in sequence order, reading the rows as they
	// are: nothing is checked.
	ReadChain(ctx context.Context, fromSeq uint64) iter.Seq2[ChainedEvent, error]
	// ChainHead returns the log's recorded head.
	ChainHead(ctx context.Context) (ChainHead, error)
}
