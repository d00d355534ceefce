package toolsearch

import (
	"slices"
	"testing"
)

func TestSchemaText(t *testing.T) {
	raw := `{
	  "type": "object",
	  "title": "ToolArguments",
	  "description": "not a parameter",
	  "properties": {
	    "owner": {"type": "string", "description": "Repository owner"},
	    "state": {"type": "string", "enum": ["open", "closed", 3]},
	    "files": {"type": "array", "items": {"type": "object", "properties": {
	      "path": {"type": "string", "title": "File Path"},
	      "deep": {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "object", "properties": {"tooDeep": {"description": "x"}}}}}}}
	    }}},
	    "when": {"anyOf": [{"type": "string", "description": "ISO \"date\""}, {"type": "null"}]},
	    "n": {"type": "integer", "default": -1.5e3, "x": [true, null, {"y": [1, 2]}]}
	  },
	  "required": ["owner"]
	}`
	n, d := schemaText([]byte(raw), nil, nil)
	names, descs := strs(n), strs(d)
	slices.Sort(names)
	slices.Sort(descs)
	wantNames := []string{"a", "b", "deep", "files", "n", "owner", "path", "state", "when"}
	wantDescs := []string{"File Path", "ISO \"date\"", "Repository owner", "closed", "open"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("names = %q, want %q", names, wantNames)
	}
	if !slices.Equal(descs, wantDescs) {
		t.Errorf("descs = %q, want %q", descs, wantDescs)
	}
}

func TestSchemaTextInvalid(t *testing.T) {
	for _, raw := range []string{``, `null`, `{"properties": {"a": {}}`, `{"properties": {"a": {"description": "x}}}`, `[1, 2`, `{"properties": {"a" {}}}`} {
		n, d := schemaText([]byte(raw), [][]byte{[]byte("kept")}, nil)
		if names, descs := strs(n), strs(d); !slices.Equal(names, []string{"kept"}) || descs != nil {
			t.Errorf("schemaText(%q) = %q, %q; want the input slices unchanged", raw, names, descs)
		}
	}
}

func strs(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}
