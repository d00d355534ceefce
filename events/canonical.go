package events

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// appendToolsCanonical appends the canonical JSON of defs to dst: the
// bytes canonicalJSON(defs) produces, built without decoding the schemas
// into generic values when they are canonical already, as schemas
// marshalled from decoded JSON are. ok is false when a value is not valid
// JSON; the caller then falls back to canonicalJSON.
func appendToolsCanonical(dst []byte, defs []ToolDef) (_ []byte, ok bool) {
	if defs == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i := range defs {
		if i > 0 {
			dst = append(dst, ',')
		}
		d := &defs[i]
		// The fields in the sorted order of their JSON names, as a
		// generic object marshals them.
		dst = append(dst, '{')
		sep := false
		field := func(name string) {
			if sep {
				dst = append(dst, ',')
			}
			sep = true
			dst = append(dst, '"')
			dst = append(dst, name...)
			dst = append(dst, '"', ':')
		}
		raw := func(name string, v json.RawMessage) bool {
			if len(v) == 0 {
				return true
			}
			field(name)
			dst, ok = appendCanonicalValue(dst, v)
			return ok
		}
		str := func(name, v string, omitEmpty bool) {
			if v == "" && omitEmpty {
				return
			}
			field(name)
			dst = appendJSONString(dst, v)
		}
		if !raw("annotations", d.Annotations) {
			return dst, false
		}
		str("description", d.Description, true)
		if !raw("icons", d.Icons) {
			return dst, false
		}
		if !raw("inputSchema", d.InputSchema) {
			return dst, false
		}
		str("name", d.Name, false)
		if !raw("outputSchema", d.OutputSchema) {
			return dst, false
		}
		str("title", d.Title, true)
		dst = append(dst, '}')
	}
	return append(dst, ']'), true
}

// appendCanonicalValue appends the canonical form of the JSON value v: v
// itself when it is canonical, else v decoded into a generic value and
// marshalled again.
func appendCanonicalValue(dst []byte, v json.RawMessage) ([]byte, bool) {
	s := canonScanner{b: v}
	if s.value() && s.i == len(v) {
		return append(dst, v...), true
	}
	var generic any
	if err := json.Unmarshal(v, &generic); err != nil {
		return dst, false
	}
	b, err := json.Marshal(generic)
	if err != nil {
		return dst, false
	}
	return append(dst, b...), true
}

// appendJSONString appends s as canonicalJSON writes a string: as
// encoding/json escapes it, with HTML characters escaped.
func appendJSONString(dst []byte, s string) []byte {
	if !utf8.ValidString(s) {
		// Marshalled twice, as canonicalJSON does: invalid UTF-8 first
		// becomes an escaped U+FFFD, then the character itself.
		b, _ := json.Marshal(s)
		dst, _ = appendCanonicalValue(dst, b)
		return dst
	}
	dst = append(dst, '"')
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf && plainByte(byte(r)):
			dst = append(dst, byte(r))
		case r == '\\' || r == '"':
			dst = append(dst, '\\', byte(r))
		case r == '\b':
			dst = append(dst, '\\', 'b')
		case r == '\f':
			dst = append(dst, '\\', 'f')
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r < utf8.RuneSelf: // other control characters, <, > and &
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// plainByte reports whether encoding/json writes the ASCII byte c as it
// is, with HTML characters escaped.
func plainByte(c byte) bool {
	return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// canonicalString reports whether body, the text between a JSON string's
// quotes, is written exactly as appendJSONString writes what it decodes
// to.
func canonicalString(body []byte) bool {
	for i := 0; i < len(body); {
		c := body[i]
		if c < utf8.RuneSelf {
			if plainByte(c) {
				i++
				continue
			}
			if c != '\\' || i+1 >= len(body) {
				return false
			}
			switch body[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
				continue
			case 'u':
			default:
				return false
			}
			if i+6 > len(body) {
				return false
			}
			u := string(body[i+2 : i+6])
			switch {
			case u == "2028" || u == "2029" || u == "003c" || u == "003e" || u == "0026":
			case u[:2] == "00" && (u[2] == '0' || u[2] == '1') && strings.IndexByte(hexDigits, u[3]) >= 0:
				switch u[2:] {
				case "08", "0c", "0a", "0d", "09": // written as \b, \f, \n, \r, \t
					return false
				}
			default:
				return false
			}
			i += 6
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// canonScanner checks that a JSON text is exactly what encoding/json
// writes for its generic decoding: no white space, object keys unique and
// sorted, strings escaped as the encoder escapes them, numbers formatted
// as float64. It answers false for anything it is not sure of; the caller
// then takes the slow, exact path.
type canonScanner struct {
	b []byte
	i int
}

func (s *canonScanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

func (s *canonScanner) literal(w string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		return false
	}
	s.i += len(w)
	return true
}

func (s *canonScanner) object() bool {
	s.i++ // {
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	var prev []byte
	for first := true; ; first = false {
		key, ok := s.str()
		// Keys with escapes sort by their decoded text; leave them to
		// the exact path.
		if !ok || bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		if !first && bytes.Compare(prev, key) >= 0 {
			return false
		}
		prev = key
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !s.value() {
			return false
		}
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *canonScanner) array() bool {
	s.i++ // [
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value() || s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// str scans a string and returns its contents between the quotes, and
// whether they are canonical.
func (s *canonScanner) str() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	plain := true
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			body := s.b[start:s.i]
			s.i++
			return body, plain || canonicalString(body)
		case c == '\\':
			plain = false
			s.i++ // the escaped byte cannot end the string
		case !plainByte(c):
			plain = false
		}
	}
	return nil, false
}

// number scans a number and checks it is written as encoding/json writes
// the float64 it decodes to.
func (s *canonScanner) number() bool {
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	text := s.b[start:s.i]
	if smallInt(text) {
		return true
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return false
	}
	return bytes.Equal(appendFloat(nil, f), text)
}

// smallInt reports whether text is an integer of at most 15 digits with no
// leading zero: float64 holds it exactly and encoding/json writes it back
// unchanged.
func smallInt(text []byte) bool {
	if len(text) > 0 && text[0] == '-' {
		text = text[1:]
	}
	if len(text) == 0 || len(text) > 15 || (text[0] == '0' && len(text) > 1) {
		return false
	}
	for _, c := range text {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendFloat writes f as encoding/json writes a float64.
func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as the encoder writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
