package store

import (
	"context"
	"time"
)

// Directions of a [TranscriptLine].
const (
	// TranscriptOut is a message the client sent to the server.
	TranscriptOut = "out"
	// TranscriptIn is a message the client received from the server.
	TranscriptIn = "in"
	// TranscriptCut is no message: it counts the messages of a connection
	// that were not kept (its per-session cap reached, or its queue full
	// when the store fell behind), in Dropped.
	TranscriptCut = "cut"
)

// TranscriptLine is one JSON-RPC message of a server's transcript: the
// wire messages between the client and one server, kept beside the
// lifecycle events (never inside them) when the server's transcript is
// on. Message is the message's JSON, scrubbed of the connection's
// secrets; when it was longer than the per-message cap it is cut (no
// longer valid JSON) and Cut says how many bytes were left out.
type TranscriptLine struct {
	// Seq orders the lines of a session; the store assigns it.
	Seq     uint64    `json:"seq"`
	Session string    `json:"session"`
	Server  string    `json:"server"`
	Time    time.Time `json:"time"`
	// Direction is TranscriptOut, TranscriptIn or TranscriptCut.
	Direction string `json:"direction"`
	Message   string `json:"message,omitempty"`
	// Cut is the number of bytes of Message left out.
	Cut int64 `json:"cut,omitempty"`
	// Dropped is, on a TranscriptCut line, the number of messages not
	// kept, and DroppedBytes their size.
	Dropped      int64 `json:"dropped,omitempty"`
	DroppedBytes int64 `json:"droppedBytes,omitempty"`
}

// TranscriptStore is an optional capability: a store that keeps server
// transcripts in a table of their own, beside the events. Callers find it
// by type assertion.
type TranscriptStore interface {
	// AppendTranscript stores lines, in order, assigning each its Seq.
	AppendTranscript(ctx context.Context, lines []TranscriptLine) error
	// ReadTranscript returns the lines of session in the order they were
	// stored (nil when it has none).
	ReadTranscript(ctx context.Context, session string) ([]TranscriptLine, error)
}
