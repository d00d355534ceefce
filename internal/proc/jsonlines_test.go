package proc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"
)

// defaultLimit is the manager's default line limit, 16 MiB.
const defaultLimit = 16 << 20

// readers returns in read whole, a byte at a time and in halves.
func readers(in string) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"halves":   func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
	}
}

func TestJSONLinesPassesOnlyJSONRPC(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"result":{"text":"` + strings.Repeat("x", 200<<10) + `"}}`
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`,
		`[{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}},{"jsonrpc":"2.0","method":"ping","id":"p"}]`,
		big,
		`{"id":3,"result":[1,2,{"a":null}],"jsonrpc":"2.0"}`,
	}
	in := "Server starting on stdio...\n" +
		"[INFO] Starting MCP server\n" +
		msgs[0] + "\n" +
		`{"level":30,"time":1700000000000,"pid":42,"hostname":"h","msg":"listening"}` + "\n" +
		"\n   \r\n" +
		"  " + msgs[1] + "  \r\n" + // blanks around a message are dropped
		"[1,2]\n" +
		`{"jsonrpc":"2.0","id":1}` + "\n" + // neither method nor result
		`{"jsonrpc":"1.0","id":1,"result":1}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":1} trailing` + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":` + "\n" + // cut short
		msgs[2] + "\r\n" +
		"DEBUG: {not at the start}\n" +
		big + "\n" +
		"[]\n" +
		msgs[4] // the last line needs no newline
	want := msgs[0] + "\n" + msgs[1] + "\n" + msgs[2] + "\r\n" + big + "\n" + msgs[4] + "\n"
	const skipped = 10
	for name, r := range readers(in) {
		t.Run(name, func(t *testing.T) {
			stderr := NewRing(stderrLimit)
			stderr.Write([]byte("a partial stderr line"))
			f := NewJSONLines(r(), "fx", defaultLimit, stderr, slog.New(slog.DiscardHandler))
			got, err := io.ReadAll(iotest.OneByteReader(f))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, []byte(want)) {
				t.Errorf("got %d bytes %.300q…, want %d bytes", len(got), got, len(want))
			}
			if f.skipped != skipped {
				t.Errorf("skipped %d lines, want %d", f.skipped, skipped)
			}
			notes := string(stderr.Bytes())
			for _, want := range []string{
				"a partial stderr line\n[mcplife: skipped non-JSON-RPC stdout line 1: Server starting on stdio...]\n",
				"[mcplife: skipped non-JSON-RPC stdout line 2: [INFO] Starting MCP server]\n",
				`[mcplife: skipped non-JSON-RPC stdout line 3: {"level":30,"time":1700000000000,"pid":42,"hostname":"h","msg":"listening"}]` + "\n",
				"[mcplife: skipped non-JSON-RPC stdout line 10: []]\n",
			} {
				contains(t, "stderr", notes, want)
			}
		})
	}
}

func TestJSONLinesPassesReadErrors(t *testing.T) {
	f := NewJSONLines(iotest.ErrReader(io.ErrUnexpectedEOF), "fx", defaultLimit, nil, slog.New(slog.DiscardHandler))
	if _, err := f.Read(make([]byte, 8)); err != io.ErrUnexpectedEOF {
		t.Fatalf("err = %v", err)
	}
}

// TestJSONLinesAnswersOversizedResponses: a line over the limit is
// discarded; a response among them is replaced by an error response with
// its id, wherever the id was in the object, and the lines around pass.
func TestJSONLinesAnswersOversizedResponses(t *testing.T) {
	const limit = 1 << 10
	pad := strings.Repeat(`a\"b,c}{[x`, 200) // quotes, commas and brackets inside a string
	small := `{"jsonrpc":"2.0","id":9,"result":{}}`
	first := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + pad + `"}]}}`
	in := strings.Join([]string{
		first,
		small,
		`{"jsonrpc":"2.0","result":{"content":[{"id":99,"text":"` + pad + `"}]},"id":"after"}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + pad + `"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"data":"` + pad + `"}}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":1,"message":"` + pad + `"}}`,
		strings.Repeat("log line ", 200),
		small,
		`{"jsonrpc":"2.0","id":{"odd":1},"result":"` + pad + `"}`,
		`{"jsonrpc":"2.0","id":-7.5e3,"result":"` + pad + `"}`,
		small,
	}, "\n") + "\n"
	for name, r := range readers(in) {
		t.Run(name, func(t *testing.T) {
			stderr := NewRing(stderrLimit)
			f := NewJSONLines(r(), "bulky", limit, stderr, slog.New(slog.DiscardHandler))
			got, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, line := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
				var m struct {
					ID    json.RawMessage
					Error *struct {
						Code    int
						Message string
					}
				}
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				if m.Error == nil {
					ids = append(ids, string(m.ID)+":ok")
					continue
				}
				ids = append(ids, string(m.ID)+":error")
				if m.Error.Code != codeInternalError {
					t.Errorf("code %d", m.Error.Code)
				}
				contains(t, "error message", m.Error.Message, `MCP server "bulky" sent a`)
				contains(t, "error message", m.Error.Message, "over the 1 KiB limit on one message (manager Options.MaxMessageSize)")
			}
			equal(t, "answers", ids, []string{`1:error`, `9:ok`, `"after":error`, `6:error`, `9:ok`, `-7.5e3:error`, `9:ok`})
			if f.oversized != 8 {
				t.Errorf("oversized %d, want 8", f.oversized)
			}
			notes := string(stderr.Bytes())
			contains(t, "stderr", notes, fmt.Sprintf("[mcplife: discarded a stdout result of %d bytes, over the 1 KiB limit]\n", len(first)))
			contains(t, "stderr", notes, "[mcplife: discarded a stdout line of 1800 bytes, over the 1 KiB limit]\n")
		})
	}
}

// TestJSONLinesAnswersTooDeepResponses: a message nested deeper than the
// go-sdk decodes is discarded; a response among them is replaced by an
// error response with its id that says it was nested too deep, so its
// request fails at once; the lines around pass.
func TestJSONLinesAnswersTooDeepResponses(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"x":`, n) + `"y"` + strings.Repeat("}", n) }
	ok := `{"jsonrpc":"2.0","id":9,"result":{"a":` + deep(990) + `}}`
	first := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":` + deep(1200) + `}]}}`
	in := strings.Join([]string{
		first,
		ok,
		`{"jsonrpc":"2.0","result":{"content":` + deep(20000) + `},"id":"after"}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":` + deep(1500) + `}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":1,"message":"m","data":` + deep(1500) + `}}`,
		`[{"jsonrpc":"2.0","id":7,"result":` + deep(1500) + `}]`,
		ok,
	}, "\n") + "\n"
	for name, r := range readers(in) {
		t.Run(name, func(t *testing.T) {
			stderr := NewRing(stderrLimit)
			f := NewJSONLines(r(), "deep", defaultLimit, stderr, slog.New(slog.DiscardHandler))
			got, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, line := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
				if line == ok {
					ids = append(ids, "9:ok")
					continue
				}
				var m struct {
					ID    json.RawMessage
					Error *struct {
						Code    int
						Message string
					}
				}
				if err := json.Unmarshal([]byte(line), &m); err != nil || m.Error == nil {
					t.Fatalf("line %.200q: %v", line, err)
				}
				ids = append(ids, string(m.ID)+":error")
				if m.Error.Code != codeInternalError {
					t.Errorf("code %d", m.Error.Code)
				}
				contains(t, "error message", m.Error.Message, `MCP server "deep" sent a`)
				contains(t, "error message", m.Error.Message, "nested too deep (more than 1000 levels of objects and arrays)")
			}
			equal(t, "answers", ids, []string{`1:error`, `9:ok`, `"after":error`, `6:error`, `9:ok`})
			if f.skipped != 0 {
				t.Errorf("%d lines skipped as not JSON-RPC, want none: too deep is another reason", f.skipped)
			}
			contains(t, "stderr", string(stderr.Bytes()),
				fmt.Sprintf("[mcplife: discarded a stdout result of %d bytes nested more than 1000 levels deep]\n", len(first)))
		})
	}
}

// TestJSONLinesLimit: a message of exactly limit bytes passes (its line
// end does not count); one byte more does not.
func TestJSONLinesLimit(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", 100) + `"}`
	for _, c := range []struct {
		limit int
		pass  bool
	}{{len(msg), true}, {len(msg) - 1, false}} {
		f := NewJSONLines(strings.NewReader(msg+"\n"), "fx", c.limit, nil, slog.New(slog.DiscardHandler))
		got, _ := io.ReadAll(f)
		if passed := string(got) == msg+"\n"; passed != c.pass {
			t.Errorf("limit %d: got %.60q…", c.limit, got)
		}
	}
}

func TestIsJSONRPC(t *testing.T) {
	for line, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":null}`:                   true,
		`{"jsonrpc":"2.0","method":"x"}`:                           true,
		` { "jsonrpc" : "2.0" , "method" : "x" , "params" : [] } `: true,
		`[{"jsonrpc":"2.0","method":"x"}]`:                         true,
		`{"jsonrpc":"2.0","method":1}`:                             false,
		`{"jsonrpc":2.0,"method":"x"}`:                             false,
		`{"jsonrpc":"2.0","id":1}`:                                 false,
		`{"jsonrpc":"2.0","result":1}`:                             false,
		`{"method":"x"}`:                                           false,
		`{}`:                                                       false,
		`[]`:                                                       false,
		`[{"jsonrpc":"2.0","method":"x"},1]`:                       false,
		`[INFO] Starting MCP server`:                               false,
		`{"level":30,"time":1,"msg":"ready"}`:                      false,
		`{"jsonrpc":"2.0","method":"x"}{}`:                         false,
		`{"jsonrpc":"2.0","method":"x",}`:                          false,
		`{"jsonrpc":"2.0","method":"x\u00e9\n"}`:                   true,
		`{"jsonrpc":"2.0","method":"x\q"}`:                         false,
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\ty\"}":                false,
		`{"jsonrpc":"2.0","method":"x","p":[1,-0.5e+3,true,false,null,{}]}`: true,
		`{"jsonrpc":"2.0","method":"x","p":01}`:                             false,
		`{"jsonrpc":"2.0","method":"x","p":1.}`:                             false,
		`{"jsonrpc":"2.0","method":"x","p":tru}`:                            false,
		// What the go-sdk would fail to decode, ending the connection.
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`: false,
		`{"jsonrpc":"2.0","id":true,"result":1}`:                                false,
		`{"jsonrpc":"2.0","id":[1],"result":1}`:                                 false,
		`{"jsonrpc":"2.0","id":"a","result":1}`:                                 true,
		`{"jsonrpc":"2.0","id":-1.5,"result":1}`:                                true,
		`{"jsonrpc":"2.0","id":{},"method":"x"}`:                                false,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`:                              true,
		`{"jsonrpc":"2.0","method":null}`:                                       false,
		`{"jsonrpc":"2.0","method":5,"id":1,"result":1}`:                        false,
		`{"jsonrpc":"2.0","id":1,"error":"failed"}`:                             false,
		`{"jsonrpc":"2.0","id":1,"error":null}`:                                 true,
		`{"jsonrpc":"2.0","id":1,"error":{}}`:                                   true,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`:           false,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1e3,"message":"m"}}`:           false,
		`{"jsonrpc":"2.0","id":1,"error":{"code":99999999999999999999}}`:        false,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-9223372036854775808}}`:        true,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}`:               false,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":[{}]}}`: true,
	} {
		if got := isJSONRPC([]byte(line)); got != want {
			t.Errorf("isJSONRPC(%s) = %v, want %v", line, got, want)
		}
	}
	// The go-sdk decodes nesting up to 1000 deep, the message included.
	nested := func(n int) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"x","p":` + strings.Repeat("[", n) + strings.Repeat("]", n) + "}")
	}
	if !isJSONRPC(nested(999)) || isJSONRPC(nested(1000)) {
		t.Error("nesting limit is not the go-sdk's")
	}
	batch := func(n int) []byte {
		return []byte(`[{"jsonrpc":"2.0","method":"x","p":` + strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) + "}]")
	}
	if !isJSONRPC(batch(998)) || isJSONRPC(batch(999)) {
		t.Error("nesting limit in a batch is not the go-sdk's")
	}
}

// validJSON reports whether b is one JSON value, by the scanner of
// [isJSONRPC] (whose nesting limit, lower than encoding/json's, random
// inputs do not reach).
func validJSON(b []byte) bool {
	s := jsonScanner{b: b}
	s.space()
	ok := s.value()
	s.space()
	return ok && s.i == len(b)
}

// FuzzJSONScanner checks the scanner against encoding/json.
func FuzzJSONScanner(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":"c\"\\\/\b\f\n\r\t\u0041"}],"d":-0.5e+10,"e":true,"f":false,"g":null}`,
		`[]`, `{}`, `""`, `0`, `-`, `1e`, `01`, `"\u12"`, `{"a" 1}`, `[1,]`, "\"\x01\"", "\"\xff\"", ` 1 `, `1 2`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

// BenchmarkJSONLines measures the filter on a typical tool-call response
// of about 200 bytes.
func BenchmarkJSONLines(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"` +
		strings.Repeat("lorem ipsum ", 9) + `"}],"structuredContent":{"text":"ok"},"isError":false}}` + "\n")
	if !isJSONRPC(bytes.TrimSpace(line)) {
		b.Fatal("not a message")
	}
	src := &repeatReader{line: line}
	f := NewJSONLines(src, "fx", defaultLimit, nil, slog.New(slog.DiscardHandler))
	buf := make([]byte, 4096)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		src.left = 1
		n, err := f.Read(buf)
		if err != nil || n != len(line) {
			b.Fatal(n, err)
		}
	}
}

// repeatReader returns line once per Read while left > 0.
type repeatReader struct {
	line []byte
	left int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, fmt.Errorf("repeatReader: read past the line")
	}
	r.left--
	return copy(p, r.line), nil
}

// contains fails the test when s lacks sub.
func contains(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%s %q does not contain %q", what, s, sub)
	}
}

// equal fails the test when got and want print differently.
func equal[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}
