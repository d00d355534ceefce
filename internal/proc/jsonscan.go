package proc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
)

// isJSONRPC reports whether line (one line of a stdio server's stdout,
// without its newline) is a JSON-RPC 2.0 message the go-sdk can decode: a
// JSON object with "jsonrpc": "2.0" and either a string "method" (a
// request or notification, whose "id", if any, is a number, a string or
// null) or an "id" that is a number or a string with a "result" or an
// "error" (null, or an object whose "code" is an integer and whose
// "message" is a string); or a non-empty batch array of such objects.
// Whitespace around the value is allowed, anything else after it is not.
//
// It checks in one pass, without allocating, that the whole line is
// valid JSON nested no deeper than the go-sdk accepts: a line the go-sdk
// fails to decode would end the connection. Member names are matched as
// written (escaped names do not count).
func isJSONRPC(line []byte) bool {
	ok, _ := checkJSONRPC(line)
	return ok
}

// checkJSONRPC is [isJSONRPC], and also reports, when line is not a
// message, whether that is because it nests objects and arrays deeper
// than [maxJSONDepth] (what follows the too-deep part is not checked).
func checkJSONRPC(line []byte) (ok, tooDeep bool) {
	s := jsonScanner{b: line}
	s.space()
	switch s.peek() {
	case '{':
		ok = s.message()
	case '[':
		ok = s.batch()
	}
	s.space()
	if s.tooDeep {
		return false, true
	}
	return ok && s.i == len(s.b), false
}

// maxJSONDepth is the deepest nesting of objects and arrays the go-sdk
// decodes, counting the message itself.
const maxJSONDepth = 1000

// jsonScanner validates JSON text in b from position i. Each method
// consumes one element and reports whether it was valid; after false, i is
// meaningless.
type jsonScanner struct {
	b       []byte
	i       int
	depth   int  // of the innermost open object or array
	tooDeep bool // a value nested deeper than maxJSONDepth ended the scan
	// spans, when set, gets where the members of a message are.
	spans *MessageSpans
}

// enter opens an object or array, and reports false (noting why) when it
// is nested deeper than maxJSONDepth.
func (s *jsonScanner) enter() bool {
	if s.depth++; s.depth > maxJSONDepth {
		s.tooDeep = true
		return false
	}
	return true
}

func (s *jsonScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// eat consumes c, after optional whitespace.
func (s *jsonScanner) eat(c byte) bool {
	s.space()
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// member consumes a member name and its colon, and returns the name as
// written.
func (s *jsonScanner) member() (name []byte, ok bool) {
	s.space()
	start := s.i
	if s.peek() != '"' || !s.string() {
		return nil, false
	}
	name = s.b[start+1 : s.i-1]
	if !s.eat(':') {
		return nil, false
	}
	s.space()
	return name, true
}

// message consumes an object and reports whether it is valid and a
// JSON-RPC 2.0 message.
func (s *jsonScanner) message() bool {
	s.depth++
	s.i++ // '{'
	if s.eat('}') {
		return false
	}
	var version, hasMethod, method, result, failure bool
	var id byte // the first byte of the id's value; 0: no id
	for {
		name, ok := s.member()
		if !ok {
			return false
		}
		start := s.i
		if string(name) == "error" {
			ok = s.errorValue()
		} else {
			ok = s.value()
		}
		if !ok {
			return false
		}
		switch string(name) {
		case "jsonrpc":
			version = string(s.b[start:s.i]) == `"2.0"`
		case "method":
			hasMethod, method = true, s.b[start] == '"'
		case "id":
			id = s.b[start]
		case "result":
			result = true
		case "error":
			failure = true
		}
		if s.spans != nil {
			s.spans.note(name, s.b[start:s.i])
		}
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return false
		}
		s.depth--
		number := id == '-' || id >= '0' && id <= '9'
		if hasMethod {
			return version && method && (id == 0 || id == '"' || id == 'n' || number)
		}
		return version && (id == '"' || number) && (result || failure)
	}
}

// errorValue consumes the value of a response's "error" and reports
// whether it is valid and what the go-sdk decodes: null, or an object
// whose "code" is null or an integer in int64 and whose "message" is null
// or a string.
func (s *jsonScanner) errorValue() bool {
	switch s.peek() {
	case 'n':
		return s.literal("null")
	case '{':
	default:
		return false
	}
	valid := true
	return s.object(func(name, v []byte) bool {
		switch string(name) {
		case "code":
			valid = v[0] == 'n' || isInt64(v)
		case "message":
			valid = v[0] == 'n' || v[0] == '"'
		}
		return valid
	}) && valid
}

// object consumes an object (b[i] is its opening brace) and calls visit
// with the name, as written, and the raw value of each member, in order.
// When visit returns false the rest is not read and object reports true;
// otherwise it reports whether the object is valid.
func (s *jsonScanner) object(visit func(name, value []byte) bool) bool {
	if !s.enter() {
		return false
	}
	s.i++
	if s.eat('}') {
		s.depth--
		return true
	}
	for {
		name, ok := s.member()
		if !ok {
			return false
		}
		start := s.i
		if !s.value() {
			return false
		}
		if !visit(name, s.b[start:s.i]) {
			return true
		}
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return false
		}
		s.depth--
		return true
	}
}

// isInt64 reports whether the JSON number v is an integer that fits in an
// int64.
func isInt64(v []byte) bool {
	if bytes.ContainsAny(v, ".eE") {
		return false
	}
	_, err := strconv.ParseInt(string(v), 10, 64)
	return err == nil
}

// batch consumes an array and reports whether it is valid and holds only
// JSON-RPC 2.0 messages, at least one.
func (s *jsonScanner) batch() bool {
	s.depth++
	s.i++ // '['
	for {
		s.space()
		if s.peek() != '{' || !s.message() {
			return false
		}
		if s.eat(',') {
			continue
		}
		s.depth--
		return s.eat(']')
	}
}

// value consumes any JSON value; the caller skipped leading whitespace.
func (s *jsonScanner) value() bool {
	switch c := s.peek(); {
	case c == '"':
		return s.string()
	case c == '{' || c == '[':
		return s.container(c)
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *jsonScanner) container(open byte) bool {
	if !s.enter() {
		return false
	}
	ok := s.members(open)
	s.depth--
	return ok
}

// members consumes the rest of an array or object after its opening
// bracket, at b[i].
func (s *jsonScanner) members(open byte) bool {
	s.i++
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	if s.eat(closing) {
		return true
	}
	for {
		if open == '{' {
			if _, ok := s.member(); !ok {
				return false
			}
		} else {
			s.space()
		}
		if !s.value() {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat(closing)
	}
}

// string consumes a string; b[i] is its opening quote. Bytes that are not
// valid UTF-8 are accepted, as encoding/json accepts them.
func (s *jsonScanner) string() bool {
	b, i := s.b, s.i+1
	for {
		// Eight bytes at a time while none is special (the bulk of a
		// text result), then byte by byte up to the special one.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			quote, backslash := x^(ones*'"'), x^(ones*'\\')
			if ((quote-ones)&^quote|(backslash-ones)&^backslash|(x-ones*0x20)&^x)&highs != 0 {
				break
			}
			i += 8
		}
		for i < len(b) && plainStringByte[b[i]] {
			i++
		}
		if i >= len(b) || b[i] < 0x20 {
			return false
		}
		if b[i] == '"' {
			s.i = i + 1
			return true
		}
		// A backslash.
		if i+1 >= len(b) {
			return false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) {
				return false
			}
			for _, h := range b[i+2 : i+6] {
				if !isHex(h) {
					return false
				}
			}
			i += 6
		default:
			return false
		}
	}
}

// ones and highs have each byte 0x01 and 0x80: (x-ones)&^x&highs is
// non-zero when a byte of x is zero (or, with ones*n, below n).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainStringByte holds the bytes that stand for themselves inside a
// string: all but quote, backslash and control characters.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < len(t); c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *jsonScanner) number() bool {
	b, i := s.b, s.i
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	s.i = i
	return true
}

func (s *jsonScanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// maxIDLen bounds the id an oversized message may have for a stand-in
// answer; ids are numbers or short strings.
const maxIDLen = 256

// topLevelScan reads a JSON object fed in pieces without keeping it, and
// notes the names of its top-level members and the raw value of its
// top-level "id", wherever in the object they appear. It does not check
// that the text is valid JSON: it only ever judges a message that is being
// discarded, to find whom to answer.
type topLevelScan struct {
	size    int  // bytes fed
	started bool // saw the first non-blank byte
	object  bool // ... and it was '{'
	done    bool // the object closed; the rest is ignored

	depth     int
	inString  bool
	escaped   bool
	expectKey bool   // at depth 1, the next string is a member name
	inKey     bool   // reading a member name at depth 1
	key       []byte // the member name being read or last read (bounded)
	inID      bool   // reading the value of the top-level "id"
	id        []byte // that value, raw (bounded)
	idTooLong bool

	hasID, hasResult, hasError, hasMethod bool
}

// maxKeyLen bounds the member names kept: longer names are none of the
// ones looked for.
const maxKeyLen = 16

func (t *topLevelScan) feed(p []byte) {
	t.size += len(p)
	for i := 0; i < len(p) && !t.done; i++ {
		c := p[i]
		if t.inString {
			if !t.inKey && !t.inID && !t.escaped {
				// Skip the bulk of a string (a result's text) quickly.
				j := bytes.IndexAny(p[i:], "\"\\")
				if j < 0 {
					return
				}
				i += j
				c = p[i]
			}
			t.keep(c)
			switch {
			case t.escaped:
				t.escaped = false
			case c == '\\':
				t.escaped = true
			case c == '"':
				t.inString = false
				if t.inKey {
					t.inKey = false
					t.member()
				}
			}
			continue
		}
		if !t.started {
			switch c {
			case ' ', '\t', '\r', '\n':
				continue
			}
			t.started, t.object = true, c == '{'
			if !t.object {
				t.done = true
				return
			}
			t.depth, t.expectKey = 1, true
			continue
		}
		switch c {
		case '"':
			t.inString = true
			if t.depth == 1 && t.expectKey {
				t.inKey, t.expectKey, t.key = true, false, t.key[:0]
				continue
			}
		case '{', '[':
			t.depth++
		case '}', ']':
			t.depth--
			if t.depth == 0 {
				t.inID, t.done = false, true
				return
			}
		case ':':
			if t.depth == 1 {
				if string(t.key) == "id" {
					t.inID, t.hasID, t.id = true, true, t.id[:0]
				}
				continue
			}
		case ',':
			if t.depth == 1 {
				t.inID, t.expectKey = false, true
				continue
			}
		}
		t.keep(c)
	}
}

// keep adds c to the member name or id being read.
func (t *topLevelScan) keep(c byte) {
	switch {
	case t.inKey:
		if len(t.key) < maxKeyLen+1 {
			t.key = append(t.key, c)
		}
	case t.inID:
		if len(t.id) >= maxIDLen {
			t.idTooLong = true
			return
		}
		t.id = append(t.id, c)
	}
}

// member notes the member name just read; key holds it with its closing
// quote.
func (t *topLevelScan) member() {
	t.key = t.key[:len(t.key)-1]
	switch string(t.key) {
	case "result":
		t.hasResult = true
	case "error":
		t.hasError = true
	case "method":
		t.hasMethod = true
	}
}

// responseID returns the id of the discarded message when it was a
// response (it had an id that is a number or a string, and a result or an
// error, and no method): the id to answer in its place.
func (t *topLevelScan) responseID() (json.RawMessage, bool) {
	if !t.object || !t.hasID || t.idTooLong || t.hasMethod || !(t.hasResult || t.hasError) {
		return nil, false
	}
	id := bytes.TrimSpace(t.id)
	if len(id) == 0 || !json.Valid(id) {
		return nil, false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return json.RawMessage(bytes.Clone(id)), true
	}
	return nil, false
}
