package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// stripJSONC returns a copy of data in which comments (// and /* */), a
// leading UTF-8 byte-order mark and trailing commas before } or ] are
// replaced by spaces. Newlines are kept, so every byte offset into the
// result is also an offset into data: errors reported on the cleaned bytes
// point at the right line and column of the original file. Text inside
// strings is never touched.
//
// The only error is an unterminated block comment; every other syntax
// problem is left for the JSON decoder to report.
func stripJSONC(data []byte) ([]byte, error) {
	out := bytes.Clone(data)
	if bytes.HasPrefix(out, []byte("\xef\xbb\xbf")) {
		out[0], out[1], out[2] = ' ', ' ', ' '
	}
	// Pass 1: comments.
	for i := 0; i < len(out); i++ {
		switch out[i] {
		case '"':
			i = skipString(out, i)
		case '/':
			if i+1 >= len(out) {
				continue
			}
			switch out[i+1] {
			case '/':
				for ; i < len(out) && out[i] != '\n' && out[i] != '\r'; i++ {
					out[i] = ' '
				}
			case '*':
				start := i
				out[i], out[i+1] = ' ', ' '
				i += 2
				closed := false
				for ; i < len(out); i++ {
					if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
						out[i], out[i+1] = ' ', ' '
						i++
						closed = true
						break
					}
					if out[i] != '\n' && out[i] != '\r' {
						out[i] = ' '
					}
				}
				if !closed {
					return nil, &offsetError{Offset: start, Msg: "unterminated /* comment"}
				}
			}
		}
	}
	// Pass 2: trailing commas (comments are blank by now).
	for i := 0; i < len(out); i++ {
		switch out[i] {
		case '"':
			i = skipString(out, i)
		case ',':
			j := i + 1
			for j < len(out) && isJSONSpace(out[j]) {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out, nil
}

// skipString returns the index of the closing quote of the string that
// opens at b[i], or len(b)-1 when it is not closed.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b) - 1
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// offsetError is a syntax error at a byte offset of a file.
type offsetError struct {
	Offset int
	Msg    string
}

func (e *offsetError) Error() string { return e.Msg }

// position converts a byte offset of data into a 1-based line and a 1-based
// column counted in characters.
func position(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return line, utf8.RuneCount(data[start:off]) + 1
}

// jsonDoc is one JSON-with-comments file, cleaned and ready to decode. Its
// offsets map onto the original text for error positions.
type jsonDoc struct {
	path  string
	orig  []byte
	clean []byte
	// base is the offset of clean in orig: clean may be one value of the
	// file, cleaned alone. Every offset is one into orig.
	base int
}

// member is one name/value pair of a JSON object, in file order.
type member struct {
	Key    string
	Value  json.RawMessage // a sub-slice of the cleaned document
	Offset int             // offset of Value in the document
}

// parseJSONC cleans data and checks that it holds exactly one JSON object.
// Errors are *fileErr values whose text is "path:line:col: message".
func parseJSONC(path string, data []byte) (*jsonDoc, []member, error) {
	clean, err := stripJSONC(data)
	if err != nil {
		var oe *offsetError
		if errors.As(err, &oe) {
			return nil, nil, syntaxErrorAt(path, data, oe.Offset, oe.Msg)
		}
		return nil, nil, &fileErr{Path: path, Msg: err.Error()}
	}
	doc := &jsonDoc{path: path, orig: data, clean: clean}
	if len(bytes.TrimSpace(clean)) == 0 {
		// An empty file (or one holding only comments) configures nothing.
		return doc, nil, nil
	}
	// encoding/json reports the exact offset of a syntax error for a whole
	// document; check it whole first, then walk the objects.
	if err := json.Unmarshal(clean, new(json.RawMessage)); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off := int(se.Offset) - 1
			if strings.HasPrefix(se.Error(), "unexpected end") {
				off = len(clean)
			}
			return nil, nil, doc.errorAt(off, se.Error())
		}
		return nil, nil, doc.errorAt(0, err.Error())
	}
	members, err := doc.object(0, len(clean), true)
	if err != nil {
		return nil, nil, err
	}
	return doc, members, nil
}

// object decodes the JSON object at offsets start to end into its members.
// With top set, nothing but white space may follow the object.
func (d *jsonDoc) object(start, end int, top bool) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(d.clean[start-d.base : end-d.base]))
	tok, err := dec.Token()
	if err != nil {
		return nil, d.decodeError(start, dec, err)
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return nil, d.errorAt(start+int(dec.InputOffset())-1, "expected a JSON object")
	}
	var out []member
	index := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, d.decodeError(start, dec, err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		valueAt := start + int(dec.InputOffset())
		if err := dec.Decode(&raw); err != nil {
			return nil, d.decodeError(start, dec, err)
		}
		// The value starts after the colon and any white space.
		for valueAt < end && (isJSONSpace(d.clean[valueAt-d.base]) || d.clean[valueAt-d.base] == ':') {
			valueAt++
		}
		m := member{Key: key, Value: raw, Offset: valueAt}
		// A repeated key replaces the earlier one, as in encoding/json.
		if i, dup := index[key]; dup {
			out = append(out[:i], out[i+1:]...)
			for k, v := range index {
				if v > i {
					index[k] = v - 1
				}
			}
		}
		index[key] = len(out)
		out = append(out, m)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, d.decodeError(start, dec, err)
	}
	if top {
		if _, err := dec.Token(); err != io.EOF {
			if err == nil {
				return nil, d.errorAt(start+int(dec.InputOffset())-1, "unexpected data after the top-level object")
			}
			return nil, d.decodeError(start, dec, err)
		}
	}
	return out, nil
}

// objectOf decodes m's value as an object; ok is false when it is not one.
func (d *jsonDoc) objectOf(m member) (members []member, ok bool) {
	v := bytes.TrimSpace(m.Value)
	if len(v) == 0 || v[0] != '{' {
		return nil, false
	}
	members, err := d.object(m.Offset, m.Offset+len(m.Value), false)
	if err != nil {
		return nil, false
	}
	return members, true
}

// decodeError turns an encoding/json error from a decoder reading
// d.clean[base:] into a positioned *fileErr.
func (d *jsonDoc) decodeError(base int, dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return d.errorAt(base+int(se.Offset)-1, se.Error())
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return d.errorAt(d.base+len(d.clean), "unexpected end of JSON input")
	}
	return d.errorAt(base+int(dec.InputOffset()), err.Error())
}

func (d *jsonDoc) errorAt(off int, msg string) *fileErr {
	return syntaxErrorAt(d.path, d.orig, off, msg)
}

// where returns "path:line:col" for an offset of the document.
func (d *jsonDoc) where(off int) string {
	line, col := position(d.orig, off)
	return fmt.Sprintf("%s:%d:%d", d.path, line, col)
}

func syntaxErrorAt(path string, data []byte, off int, msg string) *fileErr {
	line, col := position(data, off)
	return &fileErr{Path: path, Msg: fmt.Sprintf("%s:%d:%d: %s", path, line, col, msg)}
}

// fileErr is a problem with one whole file; it becomes a [FileError].
type fileErr struct {
	Path string
	Msg  string // names the path (and position) itself
}

func (e *fileErr) Error() string { return e.Msg }

// find returns the member named key.
func find(members []member, key string) (member, bool) {
	for _, m := range members {
		if m.Key == key {
			return m, true
		}
	}
	return member{}, false
}

// decodeValue decodes a raw JSON value into a generic Go value (objects as
// map[string]any, numbers as float64).
func decodeValue(raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}
