package proc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestScanMessage(t *testing.T) {
	for _, c := range []struct {
		line string
		want MessageSpans
		ok   bool
	}{
		{line: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, ok: true,
			want: MessageSpans{ID: []byte(`1`), Method: []byte(`"tools/call"`), Params: []byte(`{"name":"x"}`)}},
		{line: `{"jsonrpc":"2.0","method":"n"}`, ok: true,
			want: MessageSpans{Method: []byte(`"n"`)}},
		{line: `{"jsonrpc":"2.0","id":"a\"b","result":[1, 2]}`, ok: true,
			want: MessageSpans{ID: []byte(`"a\"b"`), Result: []byte(`[1, 2]`)}},
		{line: `{"jsonrpc":"2.0","id":-3,"error":{"code":-32601,"message":"m"}}`, ok: true,
			want: MessageSpans{ID: []byte(`-3`), Error: []byte(`{"code":-32601,"message":"m"}`)}},
		{line: `{"jsonrpc":"2.0","id":null,"method":"m","params":[null]}`, ok: true,
			want: MessageSpans{ID: []byte(`null`), Method: []byte(`"m"`), Params: []byte(`[null]`)}},
		// Whitespace around values is not in the spans.
		{line: " {\t\"jsonrpc\" : \"2.0\" ,\n\"id\" :  7 , \"result\" : { \"a\" : 1 }  } \r\n", ok: true,
			want: MessageSpans{ID: []byte(`7`), Result: []byte(`{ "a" : 1 }`)}},
		// The last of a member given twice.
		{line: `{"jsonrpc":"2.0","id":1,"id":"two","method":"a","method":"b","params":{"x":1},"params":{"y":2}}`, ok: true,
			want: MessageSpans{ID: []byte(`"two"`), Method: []byte(`"b"`), Params: []byte(`{"y":2}`)}},
		{line: `{"jsonrpc":"2.0","id":1,"result":{"x":1},"result":null}`, ok: true,
			want: MessageSpans{ID: []byte(`1`), Result: []byte(`null`)}},
		// Names are matched as written: other cases are other members.
		{line: `{"jsonrpc":"2.0","id":1,"ID":2,"Method":"x","method":"m","Params":{}}`, ok: true,
			want: MessageSpans{ID: []byte(`1`), Method: []byte(`"m"`)}},
		// An escaped name is none of the members, and is noted.
		{line: `{"jsonrpc":"2.0","id":1,"method":"m","p\u0061rams":{"a":1}}`, ok: true,
			want: MessageSpans{ID: []byte(`1`), Method: []byte(`"m"`), Escaped: true}},
		{line: `{"jsonrpc":"2.0","i\u0064":1,"method":"m"}`, ok: true,
			want: MessageSpans{Method: []byte(`"m"`), Escaped: true}},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m","x\\y":1}`, ok: true,
			want: MessageSpans{ID: []byte(`1`), Method: []byte(`"m"`), Escaped: true}},
		// Escapes in values are not escaped names.
		{line: `{"jsonrpc":"2.0","id":1,"method":"\u006d","params":{"\u0061":1}}`, ok: true,
			want: MessageSpans{ID: []byte(`1`), Method: []byte(`"\u006d"`), Params: []byte(`{"\u0061":1}`)}},
		// Not one message.
		{line: `[{"jsonrpc":"2.0","id":1,"method":"m"}]`},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m"}x`},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m"}{}`},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m"`},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m",}`},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":}}`},
		{line: `{"id":1,"method":"m"}`},
		{line: `{"jsonrpc":"2.0","id":1,"method":1}`},
		{line: `{"jsonrpc":"2.0","id":true,"method":"m"}`},
		{line: `{"jsonrpc":"2.0","id":1}`},
		{line: `{"jsonrpc":"2.0","result":{}}`},
		{line: `{"jsonrpc":"2.0","id":1,"error":{"code":1.5}}`},
		{line: `{}`},
		{line: ``},
		{line: `null`},
		{line: `"x"`},
		{line: nestedMessage(maxJSONDepth + 1)},
	} {
		got, ok := ScanMessage([]byte(c.line))
		if !ok {
			got = MessageSpans{} // the spans of a line that is not a message mean nothing
		}
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ScanMessage(%.80q) = %s, %v; want %s, %v", c.line, spansString(got), ok, spansString(c.want), c.ok)
		}
		if ok && !isJSONRPC([]byte(c.line)) {
			t.Errorf("ScanMessage(%.80q) ok, isJSONRPC not", c.line)
		}
	}
	if _, ok := ScanMessage([]byte(nestedMessage(maxJSONDepth))); !ok {
		t.Errorf("a message nested %d deep is not one", maxJSONDepth)
	}
}

// nestedMessage returns a request whose deepest value is at depth (the
// message itself is 1).
func nestedMessage(depth int) string {
	return `{"jsonrpc":"2.0","id":1,"method":"m","params":` +
		strings.Repeat(`[`, depth-1) + strings.Repeat(`]`, depth-1) + `}`
}

func spansString(m MessageSpans) string {
	b, _ := json.Marshal(map[string]any{
		"id": string(m.ID), "method": string(m.Method), "params": string(m.Params),
		"result": string(m.Result), "error": string(m.Error), "escaped": m.Escaped,
	})
	return string(b)
}

type member struct{ name, value string }

func TestMembers(t *testing.T) {
	for _, c := range []struct {
		obj  string
		stop int // visit returns false at this member (1-based); 0: never
		want []member
		ok   bool
	}{
		{obj: `{}`, ok: true},
		{obj: ` { } `, ok: true},
		{obj: `{"a":1,"b":"x","c":null}`, ok: true,
			want: []member{{"a", `1`}, {"b", `"x"`}, {"c", `null`}}},
		// Names as written, values raw, duplicates each seen, in order.
		{obj: "{ \"b\" : [1, {\"x\":2}] ,\n\"a\\u0062\":{\"n\":{\"m\":[]}}, \"b\":true }", ok: true,
			want: []member{{"b", `[1, {"x":2}]`}, {`a\u0062`, `{"n":{"m":[]}}`}, {"b", `true`}}},
		// An early stop, even before an invalid rest.
		{obj: `{"a":1,"b":2,"c":3}`, stop: 2, ok: true, want: []member{{"a", `1`}, {"b", `2`}}},
		{obj: `{"a":1,"b":2,oops`, stop: 1, ok: true, want: []member{{"a", `1`}}},
		// Invalid objects: members before the fault may have been seen.
		{obj: `{"a":1,"b":2,oops`, want: []member{{"a", `1`}, {"b", `2`}}},
		{obj: `{"a":1,}`, want: []member{{"a", `1`}}},
		{obj: `{"a":1} x`, want: []member{{"a", `1`}}},
		{obj: `{"a":1}{}`, want: []member{{"a", `1`}}},
		{obj: `{"a":}`},
		{obj: `{"a" 1}`},
		{obj: `{a:1}`},
		{obj: `{`},
		{obj: `{} x`},
		{obj: `[]`},
		{obj: `[{"a":1}]`},
		{obj: `"{}"`},
		{obj: `null`},
		{obj: ``},
		{obj: `{"a":[1,2}`},
		{obj: "{\"a\":\"\x01\"}"},
		{obj: `{"a":` + strings.Repeat(`[`, maxJSONDepth) + strings.Repeat(`]`, maxJSONDepth) + `}`},
	} {
		var got []member
		ok := Members([]byte(c.obj), func(name, value []byte) bool {
			got = append(got, member{string(name), string(value)})
			return len(got) != c.stop
		})
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Members(%.60q) saw %q, %v; want %q, %v", c.obj, got, ok, c.want, c.ok)
		}
	}
	deep := `{"a":` + strings.Repeat(`[`, maxJSONDepth-1) + strings.Repeat(`]`, maxJSONDepth-1) + `}`
	if !Members([]byte(deep), func(name, value []byte) bool { return true }) {
		t.Errorf("an object nested %d deep is not one", maxJSONDepth)
	}
}

// FuzzScanMessage checks ScanMessage against isJSONRPC, encoding/json and
// Members: a line it takes is a message, each span is a JSON value, and
// each is the last value of its member.
func FuzzScanMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"m","data":null}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b","p\u0061rams":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,
		` {"jsonrpc" : "2.0", "id" : 1 , "result" : null } `,
		`{"jsonrpc":"2.0","id":1,"method":"m"}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, ok := ScanMessage(line)
		if !ok {
			return
		}
		if !isJSONRPC(line) {
			t.Fatalf("ScanMessage(%q) ok, isJSONRPC not", line)
		}
		last := map[string][]byte{}
		escaped := false
		if !Members(line, func(name, value []byte) bool {
			last[string(name)] = value
			escaped = escaped || strings.Contains(string(name), `\`)
			return true
		}) {
			t.Fatalf("ScanMessage(%q) ok, Members not", line)
		}
		for name, span := range map[string][]byte{
			"id": m.ID, "method": m.Method, "params": m.Params, "result": m.Result, "error": m.Error,
		} {
			if span != nil && !json.Valid(span) {
				t.Errorf("ScanMessage(%q): %s %q is not JSON", line, name, span)
			}
			if string(span) != string(last[name]) || (span == nil) != (last[name] == nil) {
				t.Errorf("ScanMessage(%q): %s %q, the last member %q", line, name, span, last[name])
			}
		}
		if m.Escaped != escaped {
			t.Errorf("ScanMessage(%q): Escaped %v", line, m.Escaped)
		}
	})
}
