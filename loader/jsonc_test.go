package loader

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStripJSONC(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"plain", `{"a": 1}`, map[string]any{"a": 1.0}},
		{"line comment", "{\n// c\n\"a\": 1 // trailing\n}", map[string]any{"a": 1.0}},
		{"block comment", "{/* x\n y */\"a\": /* in */ 1}", map[string]any{"a": 1.0}},
		{"trailing commas", `{"a": [1, 2,], "b": {"c": 3,},}`, map[string]any{"a": []any{1.0, 2.0}, "b": map[string]any{"c": 3.0}}},
		{"trailing comma before comment", "{\"a\": 1, // last\n}", map[string]any{"a": 1.0}},
		{"slashes in strings", `{"u": "http://x/y", "c": "/* not */", "l": "// no"}`, map[string]any{"u": "http://x/y", "c": "/* not */", "l": "// no"}},
		{"escaped quote", `{"a": "x\"//y", "b": 2}`, map[string]any{"a": `x"//y`, "b": 2.0}},
		{"comma in string", `{"a": ",}"}`, map[string]any{"a": ",}"}},
		{"bom", "\xef\xbb\xbf{\"a\": 1}", map[string]any{"a": 1.0}},
		{"crlf comment", "{\"a\": 1, // c\r\n\"b\": 2}", map[string]any{"a": 1.0, "b": 2.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := stripJSONC([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(tt.in) {
				t.Fatalf("length changed: %d -> %d", len(tt.in), len(out))
			}
			if strings.Count(string(out), "\n") != strings.Count(tt.in, "\n") {
				t.Fatal("newlines changed")
			}
			var got any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("unmarshal %q: %v", out, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseJSONCErrorsHavePosition(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"missing value", "{\n  \"mcpServers\": {\n    \"a\": \n  }\n}", "f.json:4:3: "},
		{"unterminated comment", "{\n  /* open\n}", "f.json:2:3: unterminated /* comment"},
		{"not an object", "[1, 2]", "f.json:1:1: expected a JSON object"},
		{"garbage after", "{} x", "f.json:1:4: "},
		{"truncated", "{\"a\": ", "f.json:1:7: unexpected end of JSON input"},
		{"column counts characters", "{\"é\": 1,\n \"ü\" 2}", "f.json:2:6: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseJSONC("f.json", []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q does not start with %q", err, tt.want)
			}
		})
	}
}

func TestParseJSONCMembersInOrder(t *testing.T) {
	in := `{"b": 1, "a": {"z": 1, "y": 2}, "b": 3}`
	doc, top, err := parseJSONC("f.json", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range top {
		keys = append(keys, m.Key+"="+string(m.Value))
	}
	if diff := cmp.Diff([]string{`a={"z": 1, "y": 2}`, "b=3"}, keys); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	a, _ := find(top, "a")
	inner, ok := doc.objectOf(a)
	if !ok || len(inner) != 2 || inner[0].Key != "z" || in[inner[1].Offset] != '2' {
		t.Errorf("inner members %+v", inner)
	}
}
