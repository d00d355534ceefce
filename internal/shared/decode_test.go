package shared

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeCases are message lines of many shapes, common and not: each
// must decode with decodeMessage exactly as with the go-sdk's decoder.
var decodeCases = []string{
	// Requests and notifications.
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
	`{"method":"m","params":{},"id":"abc","jsonrpc":"2.0"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":3}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"\u0074ools/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"méthode/ü"}`,
	`{"jsonrpc":"2.0","id":1,"method":"emoji 😀"}`,
	`{"jsonrpc":"2.0","id":1,"method":"\ud83d\ude00"}`,
	`{"jsonrpc":"2.0","id":1,"method":"\ud83d"}`,
	`{"jsonrpc":"2.0","id":1,"method":"bad` + "\xff" + `utf8"}`,
	`{"jsonrpc":"2.0","id":1,"method":"trunc` + "\xe2\x82" + `"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"` + "\xff" + `"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1,"message":"x"}}`,
	// Ids.
	`{"jsonrpc":"2.0","id":0,"method":"m"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"m"}`,
	`{"jsonrpc":"2.0","id":-7,"method":"m"}`,
	`{"jsonrpc":"2.0","id":9007199254740992,"method":"m"}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"m"}`,
	`{"jsonrpc":"2.0","id":-9007199254740993,"method":"m"}`,
	`{"jsonrpc":"2.0","id":9223372036854775807,"method":"m"}`,
	`{"jsonrpc":"2.0","id":99999999999999999999999,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1.0,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1E400,"method":"m"}`,
	`{"jsonrpc":"2.0","id":"","method":"m"}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"m"}`,
	`{"jsonrpc":"2.0","id":"a\u00e9","method":"m"}`,
	`{"jsonrpc":"2.0","id":"é","method":"m"}`,
	`{"jsonrpc":"2.0","id":"` + "\xff" + `","method":"m"}`,
	`{"jsonrpc":"2.0","id":"` + "\xed\xa0\x80" + `","method":"m"}`,
	`{"jsonrpc":"2.0","id":null,"method":"m"}`,
	`{"jsonrpc":"2.0","id":true,"method":"m"}`,
	`{"jsonrpc":"2.0","id":{},"method":"m"}`,
	`{"jsonrpc":"2.0","id":[],"method":"m"}`,
	// Responses.
	`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":"x","result":[1]}`,
	`{"jsonrpc":"2.0","id":1,"result":"s"}`,
	`{"jsonrpc":"2.0","id":1,"result":1}`,
	`{"jsonrpc":"2.0","id":1,"result":null}`,
	`{"jsonrpc":"2.0","id":1,"result":{"t":"` + "\xff" + `"}}`,
	`{"jsonrpc":"2.0","id":"` + "\xff" + `","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such method"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x","data":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":1,"error":null}`,
	`{"jsonrpc":"2.0","id":1,"error":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1.5}}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`,
	// Versions.
	`{"id":1,"method":"m"}`,
	`{"jsonrpc":"1.0","id":1,"method":"m"}`,
	`{"jsonrpc":2,"id":1,"method":"m"}`,
	`{"jsonrpc":"2\u002e0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"m"}`,
	`{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"method":"m"}`,
	// Unknown members, case, escaped names.
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{},"extra":[1,{"a":null}]}`,
	`{"jsonrpc":"2.0","ID":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"ID":2,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"Method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"METHOD":"x","method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","Params":{"a":1}}`,
	`{"jsonrpc":"2.0","id":1,"Result":{}}`,
	`{"JSONRPC":"2.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","i\u0064":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"m\u0065thod":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","p\u0061rams":{"a":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1},"p\u0061rams":{"b":1}}`,
	`{"jsonrpc":"2.0","id":1,"r\u0065sult":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"r\u0065sult":{"b":1}}`,
	`{"json\u0072pc":"2.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","x\u0000":1}`,
	// Duplicates.
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"id":"two","method":"m"}`,
	`{"jsonrpc":"2.0","id":"one","id":2,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"id":null,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1},"params":{"y":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1},"params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","params":null,"params":{"x":1}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"x":1},"result":{"y":2}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"x":1},"result":null}`,
	// Whitespace.
	" \t\r\n{ \"jsonrpc\" : \"2.0\" , \"id\" : 1 , \"method\" : \"m\" , \"params\" : { \"a\" : [ 1 , 2 ] } } \r\n",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\n{ }\n}",
	"{\"jsonrpc\":\"2.0\",\"id\" :\t\"s\" ,\"result\": [ ] }",
	// Not a single message.
	``,
	` `,
	`null`,
	`[]`,
	`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,
	`{}`,
	`{"jsonrpc":"2.0","id":1,"method":"m"}x`,
	`{"jsonrpc":"2.0","id":1,"method":"m"}{}`,
	`{"jsonrpc":"2.0","id":1,"method":"m"} {"jsonrpc":"2.0","id":2,"method":"n"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m"`,
	`{"jsonrpc":"2.0","id":1,"method":"m",}`,
	`{"jsonrpc":"2.0","id":01,"method":"m"}`,
	`{"jsonrpc":"2.0","id":+1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":tru}}`,
	`{"jsonrpc":"2.0","id":1,"method":"a` + "\n" + `b"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{'a':1}}`,
}

// nested returns a message whose params nest objects and arrays so that
// the deepest value is at depth (the message itself is 1).
func nested(depth int, response bool) string {
	inner := strings.Repeat(`[`, depth-2) + `{}` + strings.Repeat(`]`, depth-2)
	if response {
		return `{"jsonrpc":"2.0","id":1,"result":` + inner + `}`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":` + strings.Repeat(`[`, depth-3) + `1` + strings.Repeat(`]`, depth-3) + `}}`
}

func TestDecodeMessageAsGoSDK(t *testing.T) {
	cases := append([]string(nil), decodeCases...)
	for _, d := range []int{998, 999, 1000, 1001, 1002} {
		cases = append(cases, nested(d, false), nested(d, true))
	}
	for _, line := range cases {
		checkDecodeMessage(t, []byte(line))
	}
}

// TestDecodeMessageFastPath checks that the common shapes do take the
// fast path (so that the comparison above covers it).
func TestDecodeMessageFastPath(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"abc","method":"m"}`,
		`{"jsonrpc":"2.0","id":-9007199254740992,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"x","result":"s"}`,
		`{"jsonrpc":"2.0","id":1,"method":"méthode"}`,
	} {
		if _, ok := decodeCommon([]byte(line)); !ok {
			t.Errorf("decodeCommon(%s) not taken", line)
		}
	}
}

func TestDecodeMessageDoesNotKeepLine(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`,
	} {
		b := []byte(line)
		m, err := decodeMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := jsonrpc.EncodeMessage(m)
		for i := range b {
			b[i] = 'X'
		}
		got, _ := jsonrpc.EncodeMessage(m)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: after the line was overwritten, the message is %s", line, got)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, line := range decodeCases {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkDecodeMessage(t, line)
	})
}

// checkDecodeMessage fails t when decodeMessage and the go-sdk's decoder
// differ on line.
func checkDecodeMessage(t *testing.T, line []byte) {
	t.Helper()
	want, wantErr := jsonrpc.DecodeMessage(bytes.Clone(line))
	got, gotErr := decodeMessage(bytes.Clone(line))
	if (gotErr == nil) != (wantErr == nil) {
		t.Errorf("%q: error %v, the go-sdk's %v", line, gotErr, wantErr)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q: decoded %s, the go-sdk %s", line, describe(got), describe(want))
	}
}

func describe(m jsonrpc.Message) string {
	switch m := m.(type) {
	case *jsonrpc.Request:
		return "request id " + describeID(m.ID) + " method " + strings.TrimSpace(strings.ToValidUTF8(m.Method, "?")) + "=" + quote(m.Method) + " params " + quote(string(m.Params)) + nilness(m.Params == nil)
	case *jsonrpc.Response:
		e := "<nil>"
		if m.Error != nil {
			e = m.Error.Error()
		}
		return "response id " + describeID(m.ID) + " result " + quote(string(m.Result)) + nilness(m.Result == nil) + " error " + e
	}
	return "nothing"
}

func describeID(id jsonrpc.ID) string {
	b, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: []byte("0")})
	return string(b) + " (" + reflect.TypeOf(id.Raw()).String() + ")"
}

func quote(s string) string { return strings.ReplaceAll(`"`+s+`"`, "\n", `\n`) }

func nilness(isNil bool) string {
	if isNil {
		return " (nil)"
	}
	return ""
}
