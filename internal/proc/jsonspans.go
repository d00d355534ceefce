package proc

import (
	"bytes"
	"unicode/utf8"
)

// MessageSpans says where the members of one JSON-RPC message are in its
// line: each is the raw value as written (a sub-slice of the line), nil
// when the message has no such member. A member given twice is the last.
type MessageSpans struct {
	ID, Method, Params, Result, Error []byte
	// Escaped: a member name is written with an escape, which the spans
	// do not match as the go-sdk does.
	Escaped bool
}

func (m *MessageSpans) note(name, value []byte) {
	switch string(name) {
	case "id":
		m.ID = value
	case "method":
		m.Method = value
	case "params":
		m.Params = value
	case "result":
		m.Result = value
	case "error":
		m.Error = value
	default:
		if bytes.IndexByte(name, '\\') >= 0 {
			m.Escaped = true
		}
	}
}

// ScanMessage reports whether line is one JSON-RPC message (not a batch)
// that the go-sdk can decode, as [JSONLines] judges a stdio server's
// lines, and where its members are. It checks the whole line in one pass
// and does not allocate.
func ScanMessage(line []byte) (MessageSpans, bool) {
	var spans MessageSpans
	s := jsonScanner{b: line, spans: &spans}
	s.space()
	if s.peek() != '{' || !s.message() {
		return MessageSpans{}, false
	}
	s.space()
	if s.i != len(line) {
		return MessageSpans{}, false
	}
	return spans, true
}

// Members calls visit with the name, as written, and the raw value of
// each member of obj, a JSON object, in order, until visit returns false.
// It reports false when what it read of obj is not a valid object (visit
// may have seen its first members).
func Members(obj []byte, visit func(name, value []byte) bool) bool {
	s := jsonScanner{b: obj}
	s.space()
	stopped := false
	if s.peek() != '{' || !s.object(func(name, value []byte) bool {
		stopped = !visit(name, value)
		return !stopped
	}) {
		return false
	}
	s.space()
	return stopped || s.i == len(obj)
}

// PlainString returns the string that raw, a JSON string value of a
// checked line, stands for, when it has no escapes and is valid UTF-8
// (so it stands for its own bytes); false otherwise.
func PlainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}
