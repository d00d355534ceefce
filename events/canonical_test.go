package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// canonicalCases are schemas and texts the fast canonical path must treat
// exactly as the generic round trip does: canonical ones it keeps, and
// every way a text can differ from what the encoder writes.
var canonicalCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1`, `-17`, `123456789012345`,
	`1234567890123456`, `12345678901234567890`, `1.5`, `1.50`, `1e3`, `1E3`, `1e21`,
	`1e+21`, `1e-7`, `0.000001`, `1e-07`, `0.1`, `-0.0`, `01`, `1e400`, `.5`,
	`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
	`{"b":1,"a":2}`, `{"a":1,"a":2}`, ` {"a":1}`, `{"a" :1}`, `{"a":1 }`, `[1, 2]`,
	`{"a":"x<y"}`, `{"a":"x\u003cy"}`, `{"a":"line\nbreak"}`, `{"a":"tab\u0009"}`,
	`{"a":"\/"}`, `{"a":"é"}`, `{"a":"\u00e9"}`, `{"a":"\u2028"}`, "{\"a\":\"\u2028\"}",
	"{\"a\":\"\xff\"}", `{"a":"\ufffd"}`, `{"\u0062":1,"a":2}`, `{"a\"":1,"a":2}`,
	`{"a":[{"z":null,"y":[true,false]}],"b":{}}`, `"\b\f"`, `"\u0008"`, `"\u001f"`,
	`{"a":1}x`, `{"a":}`, `[1,]`, `tru`, `"unterminated`, "\"ctl\x01\"", `{"a":1e-9}`,
	`{"a":-1.25e-10}`, `{"a":100000000000000000000}`, `{"a":1e20}`, `{"a":3.0}`,
}

func slowHash(defs []ToolDef) string {
	b, err := canonicalJSON(defs)
	if err != nil {
		b, _ = json.Marshal(defs)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestHashToolsMatchesGenericRoundTrip(t *testing.T) {
	for _, c := range canonicalCases {
		for _, defs := range [][]ToolDef{
			{{Name: "t", InputSchema: json.RawMessage(c)}},
			{{Name: "t", Description: "d", OutputSchema: json.RawMessage(c), Annotations: json.RawMessage(`{"readOnlyHint":true,"destructiveHint":false}`)}},
			{{Name: "t<" + c, Title: c, Description: c}},
			{{Name: "t", Title: "T", InputSchema: json.RawMessage(`{}`), Icons: json.RawMessage(c)}},
		} {
			if got, want := HashTools(defs), slowHash(defs); got != want {
				fast, _ := appendToolsCanonical(nil, defs)
				slow, _ := canonicalJSON(defs)
				t.Errorf("%q: hash differs from the generic round trip\nfast %s\nslow %s", c, fast, slow)
			}
		}
	}
	for _, defs := range [][]ToolDef{nil, {}, {{Name: "a"}, {Name: "b", Title: "B"}},
		{{Name: "a", Description: "d", Icons: json.RawMessage(`[{"src":"data:image/png;base64,AA==","sizes":["48x48"]}]`), InputSchema: json.RawMessage(`{"type":"object"}`)}}} {
		if got, want := HashTools(defs), slowHash(defs); got != want {
			t.Errorf("%#v: hash differs from the generic round trip", defs)
		}
	}
}

// TestCanonicalScannerKeepsEncoderOutput checks that what encoding/json
// writes for a generic value is taken as it is, not re-encoded.
func TestCanonicalScannerKeepsEncoderOutput(t *testing.T) {
	for _, c := range canonicalCases {
		var v any
		if json.Unmarshal([]byte(c), &v) != nil {
			continue
		}
		enc, err := json.Marshal(v)
		if err != nil {
			continue
		}
		if bytes.Contains(enc, []byte(`\"":`)) {
			continue // keys with escapes take the exact path by design
		}
		s := canonScanner{b: enc}
		if !s.value() || s.i != len(enc) {
			t.Errorf("%s: encoder output %s not taken as canonical", c, enc)
		}
	}
}

func FuzzHashTools(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add(c, "name")
	}
	f.Fuzz(func(t *testing.T, schema, name string) {
		defs := []ToolDef{{Name: name, Description: name, InputSchema: json.RawMessage(schema)}}
		if got, want := HashTools(defs), slowHash(defs); got != want {
			fast, _ := appendToolsCanonical(nil, defs)
			slow, _ := canonicalJSON(defs)
			if !bytes.Equal(fast, slow) {
				t.Fatalf("schema %q name %q:\nfast %s\nslow %s", schema, name, fast, slow)
			}
		}
	})
}

func BenchmarkHashTools(b *testing.B) {
	defs := benchDefs()
	for b.Loop() {
		HashTools(defs)
	}
}

func BenchmarkHashToolsGenericBaseline(b *testing.B) {
	defs := benchDefs()
	for b.Loop() {
		slowHash(defs)
	}
}

// benchDefs is 50 tools with schemas as a server lists them.
func benchDefs() []ToolDef {
	defs := make([]ToolDef, 50)
	for i := range defs {
		schema, _ := json.Marshal(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":  map[string]any{"type": "string", "description": "The path of the file to read, relative to the root."},
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 1000},
				"mode":  map[string]any{"type": "string", "enum": []any{"text", "binary", "lines"}},
			},
			"required": []any{"path"},
		})
		defs[i] = ToolDef{Name: "tool_" + string(rune('a'+i%26)), Description: "Reads a file & returns <its> contents.", InputSchema: schema,
			Annotations: json.RawMessage(`{"readOnlyHint":true,"title":"Read"}`)}
	}
	return defs
}

// TestToolsWithoutIconsHashAsBefore: a list without icons hashes as it did
// before ToolDef had them, so cached lists and recorded hashes stay valid;
// icons, when sent, change the hash.
func TestToolsWithoutIconsHashAsBefore(t *testing.T) {
	defs := []ToolDef{{Name: "read", Title: "Read", Description: "Reads.", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)}}
	sum := sha256.Sum256([]byte(`[{"annotations":{"readOnlyHint":true},"description":"Reads.","inputSchema":{"type":"object"},"name":"read","title":"Read"}]`))
	if got, want := HashTools(defs), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("HashTools = %s, want %s (the hash before icons existed)", got, want)
	}
	with := []ToolDef{defs[0]}
	with[0].Icons = json.RawMessage(`[{"src":"https://example.com/read.svg","mimeType":"image/svg+xml"}]`)
	if HashTools(with) == HashTools(defs) {
		t.Error("icons do not change the hash")
	}
	if got, want := HashTools(with), slowHash(with); got != want {
		t.Error("hash with icons differs from the generic round trip")
	}
}
