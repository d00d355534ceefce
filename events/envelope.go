package events

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Envelope carries one event with its position in the store.
//
// Seq and Version are assigned by the store on append: Seq is the global,
// gapless sequence (starting at 1) across all streams; Version is the
// 1-based position within Stream. A stream holds one runtime session, so
// Stream and SessionID are normally equal. The journal stamps Host.
type Envelope struct {
	Seq           uint64    `json:"seq"`
	Stream        string    `json:"stream"`
	Version       uint64    `json:"version"`
	Type          string    `json:"type"`
	Schema        int       `json:"schema"`
	Time          time.Time `json:"time"`
	SessionID     string    `json:"sessionId"`
	CorrelationID string    `json:"correlationId,omitempty"`
	// Host identifies the machine and user that recorded the event (see
	// [DefaultHost]), so a store shared by a fleet tells its hosts apart.
	Host string          `json:"host,omitempty"`
	Data json.RawMessage `json:"data"`
}

// New encodes ev into an envelope for session (used as the stream too) at
// time t. Seq and Version are left zero for the store to assign.
func New(session string, ev Event, t time.Time) (Envelope, error) {
	d, ok := decoders[ev.Type()]
	if !ok {
		return Envelope{}, fmt.Errorf("events: encode %s: unknown event type", ev.Type())
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return Envelope{}, fmt.Errorf("events: encode %s: %w", ev.Type(), err)
	}
	return Envelope{
		Stream:    session,
		Type:      ev.Type(),
		Schema:    d.schema,
		Time:      t.UTC(),
		SessionID: session,
		Data:      data,
	}, nil
}

// WithCorrelation returns a copy of e carrying the correlation id.
func (e Envelope) WithCorrelation(id string) Envelope {
	e.CorrelationID = id
	return e
}

// Clone returns a copy of e that shares no memory with it.
func (e Envelope) Clone() Envelope {
	e.Data = slices.Clone(e.Data)
	return e
}

// Unknown is the decoded form of an event whose type (or schema version)
// this version does not know. It keeps the original bytes so tools can still
// print it; projectors skip it.
type Unknown struct {
	TypeName string
	Schema   int
	Data     json.RawMessage
}

// Type returns the recorded type string.
func (u *Unknown) Type() string { return u.TypeName }

// Decode returns the event carried by e. An unknown type, or a schema
// version newer than this version knows, decodes to [*Unknown] without
// error; malformed data for a known type is an error.
func Decode(e Envelope) (Event, error) {
	d, ok := decoders[e.Type]
	if !ok || e.Schema > d.schema {
		return &Unknown{TypeName: e.Type, Schema: e.Schema, Data: slices.Clone(e.Data)}, nil
	}
	ev := d.new()
	// Older schema versions would be upgraded here, in one place. Every
	// event is at schema 1 so far.
	if err := json.Unmarshal(e.Data, ev); err != nil {
		return nil, fmt.Errorf("events: decode %s (seq %d): %w", e.Type, e.Seq, err)
	}
	return ev, nil
}

// MustNew is [New] for events known to encode (every catalogue event does);
// it panics on error. Intended for tests and fixtures.
func MustNew(session string, ev Event, t time.Time) Envelope {
	e, err := New(session, ev, t)
	if err != nil {
		panic(err)
	}
	return e
}

func sortStrings(s []string) { slices.Sort(s) }
