package store_test

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// The chain value is the one the package documents, built here byte by
// byte: SHA-256 over the previous value, seq, version and the digest of
// the content fields, each integer 8 bytes big-endian, each string its
// length in 8 bytes and its bytes.
func TestChainHashDefinition(t *testing.T) {
	e := events.Envelope{Seq: 7, Stream: "st", Version: 3, Type: "ToolsListed", Schema: 2,
		Time:      time.Unix(0, 1_700_000_000_123456789).In(time.FixedZone("x", 3600)),
		SessionID: "sess", CorrelationID: "corr", Host: "host", Data: []byte(`{"a":1}`)}
	var content []byte
	str := func(s string) {
		content = binary.BigEndian.AppendUint64(content, uint64(len(s)))
		content = append(content, s...)
	}
	str("st")
	str("ToolsListed")
	content = binary.BigEndian.AppendUint64(content, 2)
	content = binary.BigEndian.AppendUint64(content, 1_700_000_000_123456789)
	str("sess")
	str("corr")
	str("host")
	str(`{"a":1}`)
	digest := sha256.Sum256(content)
	prev := sha256.Sum256([]byte("the event before"))
	in := append(prev[:], binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 7), 3)...)
	want := sha256.Sum256(append(in, digest[:]...))

	if got := store.ContentDigest(e); got != digest {
		t.Errorf("ContentDigest = %x, want %x", got, digest)
	}
	if got := store.ChainHash(prev, e); got != want {
		t.Errorf("ChainHash = %x, want %x", got, want)
	}
	// The time zone is no part of the stored event; a nil payload is the
	// empty one the stores keep.
	utc := e
	utc.Time = e.Time.UTC()
	if store.ChainHash(prev, utc) != want {
		t.Error("ChainHash depends on the time zone")
	}
	a, b := e, e
	a.Data, b.Data = nil, []byte{}
	if store.ContentDigest(a) != store.ContentDigest(b) {
		t.Error("a nil and an empty payload differ")
	}
	// Moving bytes from one field to the next changes the digest.
	c := e
	c.Stream, c.Type = "stT", "oolsListed"
	if store.ContentDigest(c) == digest {
		t.Error("fields are not delimited")
	}
}

// BenchmarkChainHash is the chain's cost per event in the writer: the
// content digest and the chain step of a journal-sized event.
func BenchmarkChainHash(b *testing.B) {
	e := events.Envelope{Seq: 1, Stream: "20261202T015305-26d35dad", Version: 1, Type: "ToolCallFinished", Schema: 1,
		Time: time.Now(), SessionID: "20261202T015305-26d35dad", Host: "3f2a1b2c3d4e5f60",
		Data: []byte(`{"server":"git","tool":"status","durationMs":12,"isError":false}`)}
	var prev [store.ChainHashSize]byte
	for b.Loop() {
		prev = store.ChainHash(prev, e)
		e.Seq++
	}
}
