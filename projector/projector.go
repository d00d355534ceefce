package projector

import "github.com/mcplife/mcplife/events"

// Counts says how a projection treated the envelopes passed to Apply.
type Counts struct {
	Applied     uint64 // decoded and folded in
	Ignored     uint64 // another session's, or a type the projection does not use
	Stale       uint64 // Seq not above LastSeq: a redelivery, skipped
	Unknown     uint64 // type or schema version this version does not know
	Undecodable uint64 // known type whose data did not decode
}

// sessionOf returns the session an envelope belongs to: its SessionID, or
// its Stream when SessionID is empty.
func sessionOf(env events.Envelope) string {
	if env.SessionID != "" {
		return env.SessionID
	}
	return env.Stream
}

// isKnown reports whether this version can decode env's type and schema.
func isKnown(env events.Envelope) bool {
	s := events.SchemaOf(env.Type)
	return s != 0 && env.Schema <= s
}

// skip counts an envelope the projection does not decode.
func (c *Counts) skip(env events.Envelope) {
	if isKnown(env) {
		c.Ignored++
	} else {
		c.Unknown++
	}
}

// decode decodes env, or takes the decoding at hand when decode is not
// nil, counting it as Unknown or Undecodable when it cannot be folded in.
func (c *Counts) decode(env events.Envelope, decode func() (events.Event, error)) (events.Event, bool) {
	var (
		ev  events.Event
		err error
	)
	if decode != nil {
		ev, err = decode()
	} else {
		ev, err = events.Decode(env)
	}
	if err != nil {
		c.Undecodable++
		return nil, false
	}
	if _, ok := ev.(*events.Unknown); ok {
		c.Unknown++
		return nil, false
	}
	return ev, true
}
