package splice

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestReadHead(t *testing.T) {
	str := func(s string) *string { return &s }
	const pv = `"io.modelcontextprotocol/protocolVersion"`
	for _, c := range []struct {
		params string
		want   callHead
		ok     bool
	}{
		{params: `{"name":"echo","arguments":{"name":"not this"}}`, ok: true,
			want: callHead{Name: "echo"}},
		{params: `{}`, ok: true},
		{params: ` { "arguments" : [1] , "name" : "late" } `, ok: true,
			want: callHead{Name: "late"}},
		{params: `{"name":"a","_meta":{` + pv + `:"2025-06-18","progressToken":"tok"}}`, ok: true,
			want: callHead{Name: "a", ProtocolVersion: str("2025-06-18"), ProgressToken: json.RawMessage(`"tok"`)}},
		{params: `{"_meta":{"progressToken":42},"name":"a"}`, ok: true,
			want: callHead{Name: "a", ProgressToken: json.RawMessage(`42`)}},
		{params: `{"name":"a","_meta":{"progressToken":null}}`, ok: true,
			want: callHead{Name: "a", ProgressToken: json.RawMessage(`null`)}},
		{params: `{"name":"a","_meta":{"progressToken":{"x":[1]}}}`, ok: true,
			want: callHead{Name: "a", ProgressToken: json.RawMessage(`{"x":[1]}`)}},
		// Names are matched as written, as the go-sdk's server matches them.
		{params: `{"Name":"x"}`, ok: true},
		{params: `{"Name":"x","name":"y","NAME":"z"}`, ok: true, want: callHead{Name: "y"}},
		{params: `{"name":"a","_Meta":{"progressToken":1}}`, ok: true, want: callHead{Name: "a"}},
		{params: `{"name":"a","_meta":{"ProgressToken":1,"io.modelcontextprotocol/ProtocolVersion":"v"}}`, ok: true,
			want: callHead{Name: "a"}},
		{params: `{"n\u0061me":"x"}`, ok: true},
		// The last of a member given twice.
		{params: `{"name":"a","name":"b"}`, ok: true, want: callHead{Name: "b"}},
		// An escaped name string is decoded.
		{params: `{"name":"e\u0063ho\n\"q\""}`, ok: true, want: callHead{Name: "echo\n\"q\""}},
		{params: `{"name":"\ud83d\ude00"}`, ok: true, want: callHead{Name: "😀"}},
		{params: `{"name":"é"}`, ok: true, want: callHead{Name: "é"}},
		{params: `{"name":"a` + "\xff" + `"}`, ok: true, want: callHead{Name: "a\ufffd"}},
		{params: `{"name":"a","_meta":{` + pv + `:"v\u0031"}}`, ok: true,
			want: callHead{Name: "a", ProtocolVersion: str("v1")}},
		{params: `{"name":null}`, ok: true},
		// _meta not an object: no version, no token.
		{params: `{"name":"a","_meta":"x"}`, ok: true, want: callHead{Name: "a"}},
		{params: `{"name":"a","_meta":[{"progressToken":1}]}`, ok: true, want: callHead{Name: "a"}},
		{params: `{"name":"a","_meta":null}`, ok: true, want: callHead{Name: "a"}},
		// A version that is not a string is none.
		{params: `{"name":"a","_meta":{` + pv + `:1}}`, ok: true, want: callHead{Name: "a"}},
		// Not a call's params.
		{params: `{"name":1}`},
		{params: `{"name":["a"]}`},
		{params: `{"name":{}}`},
		{params: `{"name":"a"`},
		{params: `{"name":"a",}`},
		{params: `{"name":"a"} x`},
		{params: `{"name":"a","_meta":{"progressToken":}}`},
		{params: `{"name":"a","arguments":{"x":tru}}`},
		{params: `["a"]`},
		{params: `"a"`},
		{params: `null`},
		{params: ``},
	} {
		got, ok := readHead([]byte(c.params))
		if !ok {
			got = callHead{}
		}
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("readHead(%s) = %+v, %v; want %+v, %v", c.params, describeHead(got), ok, describeHead(c.want), c.ok)
		}
	}
}

func describeHead(h callHead) string {
	v := "<nil>"
	if h.ProtocolVersion != nil {
		v = *h.ProtocolVersion
	}
	return "name " + h.Name + " version " + v + " token " + string(h.ProgressToken)
}

func TestRequestLine(t *testing.T) {
	for _, c := range []struct {
		method string
		params json.RawMessage
	}{
		{"tools/call", json.RawMessage(`{"name":"echo","arguments":{"text":"a\nb"}}`)},
		{"tools/call", json.RawMessage(`{ "name" : "x" ,` + "\r\t" + `"_meta":{"progressToken":"mcplife-splice-t1"}}`)},
		{"tools/call", json.RawMessage(`{}`)},
		{"tools/list", nil},
		{"", json.RawMessage(`{"a":[1,2,{"b":null}]}`)},
		{"a b/c~!", json.RawMessage(`{"é":"😀"}`)},
	} {
		id := prefix + "7"
		line, ok := requestLine(id, c.method, c.params)
		if !ok {
			t.Errorf("requestLine(%q, %s) not written", c.method, c.params)
			continue
		}
		if !json.Valid(line) || bytes.IndexByte(line, '\n') >= 0 {
			t.Errorf("requestLine(%q, %s) = %s: not one line of JSON", c.method, c.params, line)
			continue
		}
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Errorf("requestLine(%q, %s) = %s: %v", c.method, c.params, line, err)
			continue
		}
		want := &jsonrpc.Request{ID: jsonrpc2StringID(id), Method: c.method, Params: c.params}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("requestLine(%q, %s) = %s, decoded as %+v", c.method, c.params, line, m)
		}
	}
	for _, c := range []struct {
		method string
		params json.RawMessage
	}{
		{`tools"call`, json.RawMessage(`{}`)},
		{`tools\call`, json.RawMessage(`{}`)},
		{"tools\ncall", json.RawMessage(`{}`)},
		{"tools\x00call", json.RawMessage(`{}`)},
		{"tools\x7fcall", json.RawMessage(`{}`)},
		{"méthode", json.RawMessage(`{}`)},
		{"tools/call", json.RawMessage("{\n\"name\":\"x\"}")},
		{"tools/call", json.RawMessage("{\"name\":\"x\"}\n")},
	} {
		if line, ok := requestLine(prefix+"7", c.method, c.params); ok {
			t.Errorf("requestLine(%q, %q) = %s, want none", c.method, c.params, line)
		}
	}
}
