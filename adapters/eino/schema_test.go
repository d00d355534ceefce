package mcpeino

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
)

// A schema that eino's jsonschema type cannot decode whole: draft-07
// keywords, values its fields cannot hold, keywords it has no field for,
// numbers a float64 would change, and values its fields would drop.
const wideSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "zeta": {"type": ["string", "null"], "description": "", "x-order": 2},
    "alpha": {"type": "integer", "minimum": 1.50, "exclusiveMaximum": true, "maximum": 10,
              "enum": [12345678901234567890, 1]},
    "list": {"type": "array", "items": [{"type": "string"}, {"$ref": "#/definitions/thing"}],
             "additionalItems": false, "uniqueItems": false},
    "obj": {"type": "object", "additionalProperties": false, "required": [],
            "properties": {"b": {"const": null}, "a": {"default": 0, "format": "uri", "pattern": "^a"}}},
    "any": true
  },
  "required": ["zeta"],
  "definitions": {"thing": {"type": "object", "dependencies": {"a": ["b"]}}},
  "$defs": {"other": {"anyOf": [{"type": "string"}, {"type": "number"}], "not": {"const": 3}}},
  "dependentSchemas": {"zeta": {"required": ["alpha"]}},
  "allOf": [],
  "x-vendor": {"keep": [1, 2.0]}
}`

func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The schema eino hands a model, marshalled, is the server's schema: every
// keyword and value kept, numbers as written, properties in the server's
// order.
func TestSchemaRoundTrip(t *testing.T) {
	js, err := toSchema(json.RawMessage(wideSchema))
	if err != nil {
		t.Fatal(err)
	}
	got, err := schema.NewParamsOneOfByJSONSchema(js).ToJSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if want, have := decodeNumbers(t, []byte(wideSchema)), decodeNumbers(t, out); !reflect.DeepEqual(want, have) {
		t.Fatalf("round trip changed the schema:\n%s", out)
	}
	z, a, l := strings.Index(string(out), `"zeta"`), strings.Index(string(out), `"alpha"`), strings.Index(string(out), `"list"`)
	if z >= a || a >= l {
		t.Errorf("properties out of order: %s", out)
	}
	// The fields eino's own code reads are set.
	if js.Type != "object" || js.Properties.Len() != 5 || js.Required[0] != "zeta" {
		t.Errorf("schema fields: type %q, %d properties, required %v", js.Type, js.Properties.Len(), js.Required)
	}
	if zeta, _ := js.Properties.Get("zeta"); !reflect.DeepEqual(zeta.TypeEnhanced, []string{"string", "null"}) {
		t.Errorf("zeta's type: %+v", zeta)
	}
}

// Plain json.Unmarshal into eino's type, for contrast: the same schema
// fails to decode at all (an array "items" does not fit its field).
func TestLibraryDecodingFails(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(wideSchema), &s); err == nil {
		t.Fatal("the library decoded the schema; the conversion may no longer be needed")
	}
}

func TestSchemaErrors(t *testing.T) {
	for _, raw := range []string{`"object"`, `[1]`, `{"type":`, `{} x`} {
		if _, err := toSchema(json.RawMessage(raw)); err == nil {
			t.Errorf("%s: no error", raw)
		}
	}
	for _, raw := range []string{`true`, ` false `} {
		s, err := toSchema(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(s)
		if string(out) != strings.TrimSpace(raw) {
			t.Errorf("%s became %s", raw, out)
		}
	}
}

// The conversion against eino's jsonschema type decoding the same schema
// itself (which drops what it has no field for), on a schema it can decode.
func BenchmarkSchema(b *testing.B) {
	const typical = `{"type":"object","properties":{"path":{"type":"string","description":"File to read."},` +
		`"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1,"maximum":1000},` +
		`"mode":{"type":"string","enum":["text","binary"]}},"required":["path"],"additionalProperties":false}`
	b.Run("baseline=json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var s jsonschema.Schema
			if err := json.Unmarshal([]byte(typical), &s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("toSchema", func(b *testing.B) {
		for b.Loop() {
			if _, err := toSchema(json.RawMessage(typical)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
