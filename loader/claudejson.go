package loader

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Claude Code keeps its whole state in ~/.claude.json: prompt history,
// per-project settings and caches beside the few servers, and users'
// copies reach hundreds of megabytes. Decoding all of it to read the
// servers cost seconds and gigabytes at every discovery, and again at
// every rewrite of the file while a session watches it. claudeScan walks
// the file once instead, checking its syntax without building anything,
// and keeps only the byte ranges of the values the loader reads; those
// few are decoded as any config file is. A file the scan does not accept
// (a syntax error, nesting too deep) is parsed whole the old way, so its
// error reads exactly as before.

// claudeMaxDepth is the deepest nesting the scan accepts: encoding/json
// refuses documents nested deeper than 10000, and such a file is left to
// the whole parse for that error.
const claudeMaxDepth = 10000

// valueSpan is the byte range of one JSON value in the file.
type valueSpan struct{ start, end int }

// claudeParts are the ranges parseClaudeJSON needs, as the whole parse
// would pick them: for a repeated key the last one, and of the projects
// named by the working directory the first (in the order of their last
// occurrence) whose value is an object.
type claudeParts struct {
	servers  *valueSpan // top-level mcpServers
	project  string     // the key of the chosen project
	local    *valueSpan // its mcpServers
	rejected *valueSpan // its disabledMcpjsonServers
}

// jsonScanner checks JSON with comments and trailing commas, as
// [parseJSONC] accepts it, without decoding it.
type jsonScanner struct {
	b     []byte
	i     int
	stack []byte // the open containers, '{' or '['
}

// claudeScan scans data as ~/.claude.json for the working directories
// cwds. ok is false when data is not a document parseJSONC accepts as a
// JSON object, or not one the scan is sure of: then parse it whole.
func claudeScan(data []byte, cwds []string) (parts claudeParts, ok bool) {
	s := &jsonScanner{b: data}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		s.i = 3
	}
	if !s.ws() {
		return parts, false
	}
	if s.i == len(s.b) {
		return parts, true // an empty file configures nothing
	}
	var projects *valueSpan
	ok = s.members(func(key []byte, v valueSpan) bool {
		switch {
		case keyIs(key, "mcpServers"):
			parts.servers = &v
		case keyIs(key, "projects"):
			projects = &v
		}
		return true
	})
	if !ok || !s.ws() || s.i != len(s.b) {
		return parts, false
	}
	if projects == nil || data[projects.start] != '{' {
		return parts, true
	}
	// Each working directory's last occurrence; the whole parse keeps a
	// repeated key at the place of its last occurrence.
	type candidate struct {
		key string
		v   valueSpan
	}
	var found []candidate
	s.i = projects.start
	if !s.members(func(key []byte, v valueSpan) bool {
		for _, cwd := range cwds {
			if keyIs(key, cwd) {
				found = slices.DeleteFunc(found, func(c candidate) bool { return c.key == cwd })
				found = append(found, candidate{cwd, v})
				break
			}
		}
		return true
	}) {
		return parts, false
	}
	for _, c := range found {
		if data[c.v.start] != '{' {
			continue
		}
		parts.project = c.key
		s.i = c.v.start
		if !s.members(func(key []byte, v valueSpan) bool {
			switch {
			case keyIs(key, "mcpServers"):
				parts.local = &v
			case keyIs(key, "disabledMcpjsonServers"):
				parts.rejected = &v
			}
			return true
		}) {
			return parts, false
		}
		break
	}
	return parts, true
}

// keyIs reports whether the raw JSON string key (quotes included) decodes
// to want.
func keyIs(key []byte, want string) bool {
	raw := key[1 : len(key)-1]
	plain := bytes.IndexByte(raw, '\\') < 0
	for _, c := range raw {
		if c >= 0x80 {
			plain = false // invalid UTF-8 decodes to U+FFFD
			break
		}
	}
	if plain {
		return string(raw) == want
	}
	var k string
	return json.Unmarshal(key, &k) == nil && k == want
}

// members scans the object at s.i, calling fn with each member's raw key
// and value range, and leaves s.i after it. It reports whether the object
// is well formed (and fn returned true for every member).
func (s *jsonScanner) members(fn func(key []byte, v valueSpan) bool) bool {
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	if !s.ws() {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		start := s.i
		if !s.str() {
			return false
		}
		key := s.b[start:s.i]
		if !s.ws() || s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !s.ws() {
			return false
		}
		v := valueSpan{start: s.i}
		if !s.value(1) {
			return false
		}
		v.end = s.i
		if !fn(key, v) || !s.ws() || s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case '}':
			s.i++
			return true
		case ',':
			s.i++
			if !s.ws() {
				return false
			}
		default:
			return false
		}
	}
}

// value scans the JSON value at s.i, at nesting depth depth (the object
// it is a member of counts), and leaves s.i after it. It keeps its own
// stack of open containers, so a deeply nested file costs no Go stack.
func (s *jsonScanner) value(depth int) bool {
	s.stack = s.stack[:0]
	for {
		// A value.
		if s.i >= len(s.b) {
			return false
		}
		switch c := s.b[s.i]; c {
		case '{', '[':
			if depth+len(s.stack) >= claudeMaxDepth {
				return false
			}
			s.stack = append(s.stack, c)
			s.i++
			if !s.ws() || s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == c+2 { // '}' or ']': empty
				s.i++
				s.stack = s.stack[:len(s.stack)-1]
				break
			}
			if c == '{' && !s.memberKey() {
				return false
			}
			continue
		case '"':
			if !s.str() {
				return false
			}
		case 't':
			if !s.literal("true") {
				return false
			}
		case 'f':
			if !s.literal("false") {
				return false
			}
		case 'n':
			if !s.literal("null") {
				return false
			}
		default:
			if !s.number() {
				return false
			}
		}
		// After a value: close containers, or go on to the next element.
		for {
			if len(s.stack) == 0 {
				return true
			}
			if !s.ws() || s.i >= len(s.b) {
				return false
			}
			top := s.stack[len(s.stack)-1]
			c := s.b[s.i]
			if c == top+2 {
				s.i++
				s.stack = s.stack[:len(s.stack)-1]
				continue
			}
			if c != ',' {
				return false
			}
			s.i++
			if !s.ws() {
				return false
			}
			if top == '{' && !s.memberKey() {
				return false
			}
			break
		}
	}
}

// memberKey scans a member's key and colon, leaving s.i at its value.
func (s *jsonScanner) memberKey() bool {
	if !s.str() || !s.ws() || s.i >= len(s.b) || s.b[s.i] != ':' {
		return false
	}
	s.i++
	return s.ws()
}

// ws skips white space, comments, and a comma that only a closing brace
// or bracket follows (as stripJSONC blanks it). It reports false for an
// unterminated block comment.
func (s *jsonScanner) ws() bool {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		case '/':
			end, ok := s.comment(s.i)
			if !ok {
				return false
			}
			if end == s.i {
				return true // a lone slash: not white space
			}
			s.i = end
		case ',':
			j := s.i + 1
			for {
				for j < len(s.b) && isJSONSpace(s.b[j]) {
					j++
				}
				end, ok := s.comment(j)
				if !ok {
					return false
				}
				if end == j {
					break
				}
				j = end
			}
			if j < len(s.b) && (s.b[j] == '}' || s.b[j] == ']') {
				s.i = j
				continue
			}
			return true
		default:
			return true
		}
	}
	return true
}

// comment returns the end of the comment at i, or i when none starts
// there; ok is false for an unterminated block comment.
func (s *jsonScanner) comment(i int) (end int, ok bool) {
	if i+1 >= len(s.b) || s.b[i] != '/' {
		return i, true
	}
	switch s.b[i+1] {
	case '/':
		j := i + 2
		for j < len(s.b) && s.b[j] != '\n' && s.b[j] != '\r' {
			j++
		}
		return j, true
	case '*':
		k := bytes.Index(s.b[i+2:], []byte("*/"))
		if k < 0 {
			return i, false
		}
		return i + 2 + k + 2, true
	}
	return i, true
}

// str scans the JSON string at s.i.
func (s *jsonScanner) str() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(s.b) {
				return false
			}
			switch s.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.b) {
					return false
				}
				for _, h := range s.b[j+1 : j+5] {
					if !isHex(h) {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (s *jsonScanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *jsonScanner) number() bool {
	digits := func() bool {
		start := s.i
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i > start
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case !digits():
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return false
		}
	}
	return true
}

// spanMember returns the value at v as a member of a document that holds
// only that value, cleaned, with the file's offsets and positions.
func spanMember(path string, data []byte, key string, v valueSpan) (*jsonDoc, member, bool) {
	clean, err := stripJSONC(data[v.start:v.end])
	if err != nil {
		return nil, member{}, false
	}
	doc := &jsonDoc{path: path, orig: data, clean: clean, base: v.start}
	return doc, member{Key: key, Value: clean, Offset: v.start}, true
}
