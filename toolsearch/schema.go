package toolsearch

import (
	"encoding/json"
	"errors"
)

// maxSchemaDepth bounds how deep nested objects and array items of an
// input schema are read.
const maxSchemaDepth = 4

// errSchema stops the scan of an input schema that is not valid JSON.
var errSchema = errors.New("toolsearch: invalid schema JSON")

// schemaText appends the parameter names of an input schema (the keys of
// properties, of nested objects and of array items, up to
// [maxSchemaDepth] levels) to names, and the descriptions, titles and
// string enum values of those parameters to descs. A schema that is not
// valid JSON adds nothing.
//
// It scans the JSON in place instead of decoding it: re-indexing a server
// is dominated by reading its schemas, and a session re-indexes a server
// on every tool list change.
//
// The texts are slices of raw, or new bytes for a string with escapes.
func schemaText(raw json.RawMessage, names, descs [][]byte) ([][]byte, [][]byte) {
	s := schemaScanner{b: raw, names: names, descs: descs}
	s.space()
	if s.i >= len(s.b) {
		return names, descs
	}
	if err := s.schema(0, false); err != nil {
		return names, descs
	}
	return s.names, s.descs
}

// schemaScanner reads one JSON document from b.
type schemaScanner struct {
	b     []byte
	i     int
	names [][]byte
	descs [][]byte
}

// schema reads a schema object at nesting level depth; isProperty says
// whether it describes a parameter, whose texts are kept.
func (s *schemaScanner) schema(depth int, isProperty bool) error {
	if s.i >= len(s.b) || s.b[s.i] != '{' || depth > maxSchemaDepth {
		return s.skip()
	}
	return s.object(func(key []byte) error {
		switch string(key) {
		case "properties":
			if s.peek() != '{' {
				return s.skip()
			}
			return s.object(func(name []byte) error {
				s.names = append(s.names, name)
				return s.schema(depth+1, true)
			})
		case "items", "additionalProperties":
			return s.schemaOrList(depth+1, false)
		case "anyOf", "oneOf", "allOf":
			return s.schemaOrList(depth+1, isProperty)
		case "description", "title":
			if !isProperty || s.peek() != '"' {
				return s.skip()
			}
			str, err := s.str()
			if err != nil {
				return err
			}
			if len(str) > 0 {
				s.descs = append(s.descs, str)
			}
			return nil
		case "enum":
			if !isProperty || s.peek() != '[' {
				return s.skip()
			}
			return s.array(func() error {
				if s.peek() != '"' {
					return s.skip()
				}
				str, err := s.str()
				if err == nil {
					s.descs = append(s.descs, str)
				}
				return err
			})
		default:
			return s.skip()
		}
	})
}

// schemaOrList reads one schema or an array of schemas.
func (s *schemaScanner) schemaOrList(depth int, isProperty bool) error {
	switch s.peek() {
	case '{':
		return s.schema(depth, isProperty)
	case '[':
		return s.array(func() error { return s.schema(depth, isProperty) })
	default:
		return s.skip()
	}
}

// object reads an object, calling member with the scanner at each value.
func (s *schemaScanner) object(member func(key []byte) error) error {
	s.i++ // {
	s.space()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		if s.peek() != '"' {
			return errSchema
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		s.space()
		if s.peek() != ':' {
			return errSchema
		}
		s.i++
		s.space()
		if err := member(key); err != nil {
			return err
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSchema
		}
	}
}

// array reads an array, calling elem with the scanner at each element.
func (s *schemaScanner) array(elem func() error) error {
	s.i++ // [
	s.space()
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		s.space()
		if err := elem(); err != nil {
			return err
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errSchema
		}
	}
}

// str reads a string. Strings without escapes are sliced from the input;
// the rare escaped one is decoded by encoding/json.
func (s *schemaScanner) str() ([]byte, error) {
	start := s.i
	s.i++ // "
	escaped := false
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '\\':
			escaped = true
			s.i += 2
			continue
		case c == '"':
			s.i++
			if !escaped {
				return s.b[start+1 : s.i-1 : s.i-1], nil
			}
			var out string
			if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
				return nil, errSchema
			}
			return []byte(out), nil
		case c < 0x20:
			return nil, errSchema
		}
		s.i++
	}
	return nil, errSchema
}

// skip passes over one value of any kind, without recursion.
func (s *schemaScanner) skip() error {
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			if _, err := s.str(); err != nil {
				return err
			}
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return errSchema
			}
			depth--
			s.i++
		case ',', ':':
			if depth == 0 {
				return errSchema
			}
			s.i++
		case ' ', '\t', '\n', '\r':
			s.i++
		default: // a number, true, false or null
			for s.i < len(s.b) && !isDelim(s.b[s.i]) {
				s.i++
			}
		}
		if depth == 0 {
			return nil
		}
	}
	return errSchema
}

func isDelim(c byte) bool {
	switch c {
	case ',', ':', '{', '}', '[', ']', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

func (s *schemaScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *schemaScanner) space() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}
