package mcpeino

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/eino-contrib/jsonschema"
	orderedmap "github.com/wk8/go-ordered-map/v2"
)

// toSchema converts a tool's JSON-schema input, as the server sent it,
// into the jsonschema value eino's ToolInfo takes. It keeps what the
// library's own decoding drops: a keyword the Schema struct has no field
// for, or whose value does not fit its field (a draft-07 "definitions",
// an array "items", a boolean "exclusiveMaximum"), goes into Extras, which
// the library writes back out when it marshals the schema; numbers keep
// their exact text; "properties" keeps the server's order. Subschemas are
// converted the same way, at every depth.
func toSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	raw = bytes.TrimSpace(raw)
	switch string(raw) {
	case "true":
		s := *jsonschema.TrueSchema
		return &s, nil
	case "false":
		s := *jsonschema.FalseSchema
		return &s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("a JSON schema must be an object or a boolean")
	}
	s := &jsonschema.Schema{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		if !setKeyword(s, key, value) {
			v, err := decodeAny(value)
			if err != nil {
				return nil, err
			}
			if s.Extras == nil {
				s.Extras = map[string]any{}
			}
			s.Extras[key] = v
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON schema")
	}
	return s, nil
}

var (
	schemaPtrType  = reflect.TypeFor[*jsonschema.Schema]()
	schemaListType = reflect.TypeFor[[]*jsonschema.Schema]()
	schemaMapType  = reflect.TypeFor[map[string]*jsonschema.Schema]()
	definitionType = reflect.TypeFor[jsonschema.Definitions]()
	propertiesType = reflect.TypeFor[*orderedmap.OrderedMap[string, *jsonschema.Schema]]()
)

// schemaFields maps each keyword of jsonschema.Schema to its field index
// ("type" is handled apart: the struct spells it in two fields).
var schemaFields = func() map[string]int {
	fields := map[string]int{}
	t := reflect.TypeFor[jsonschema.Schema]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "" && name != "-" {
			fields[name] = i
		}
	}
	return fields
}()

// setKeyword sets the field of s that keyword key names to value and
// reports whether it did; false means the keyword belongs in Extras.
func setKeyword(s *jsonschema.Schema, key string, value json.RawMessage) bool {
	if key == "type" {
		var one string
		if json.Unmarshal(value, &one) == nil {
			s.Type = one
			return true
		}
		var many []string
		if json.Unmarshal(value, &many) == nil && many != nil {
			s.TypeEnhanced = many
			return true
		}
		return false
	}
	i, ok := schemaFields[key]
	if !ok {
		return false
	}
	field := reflect.ValueOf(s).Elem().Field(i)
	switch field.Type() {
	case schemaPtrType:
		sub, err := toSchema(value)
		if err != nil {
			return false
		}
		field.Set(reflect.ValueOf(sub))
	case schemaListType:
		var items []json.RawMessage
		if json.Unmarshal(value, &items) != nil {
			return false
		}
		list := make([]*jsonschema.Schema, len(items))
		for j, item := range items {
			sub, err := toSchema(item)
			if err != nil {
				return false
			}
			list[j] = sub
		}
		if len(list) == 0 {
			return false // an empty list would be dropped on the way out
		}
		field.Set(reflect.ValueOf(list))
	case schemaMapType, definitionType:
		var items map[string]json.RawMessage
		if json.Unmarshal(value, &items) != nil {
			return false
		}
		if len(items) == 0 {
			return false
		}
		m := reflect.MakeMapWithSize(field.Type(), len(items))
		for name, item := range items {
			sub, err := toSchema(item)
			if err != nil {
				return false
			}
			m.SetMapIndex(reflect.ValueOf(name), reflect.ValueOf(sub))
		}
		field.Set(m)
	case propertiesType:
		props, err := toProperties(value)
		if err != nil {
			return false
		}
		field.Set(reflect.ValueOf(props))
	default:
		v := reflect.New(field.Type())
		dec := json.NewDecoder(bytes.NewReader(value))
		dec.UseNumber()
		if dec.Decode(v.Interface()) != nil {
			return false
		}
		// A value the field would drop on the way out (a false
		// "uniqueItems", an empty "required") is kept as sent.
		if e := v.Elem(); e.IsZero() || (e.Kind() == reflect.Slice || e.Kind() == reflect.Map) && e.Len() == 0 {
			return false
		}
		field.Set(v.Elem())
	}
	return true
}

// toProperties converts a "properties" object, keeping its order.
func toProperties(value json.RawMessage) (*orderedmap.OrderedMap[string, *jsonschema.Schema], error) {
	dec := json.NewDecoder(bytes.NewReader(value))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("properties must be an object")
	}
	props := orderedmap.New[string, *jsonschema.Schema]()
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var item json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return nil, err
		}
		sub, err := toSchema(item)
		if err != nil {
			return nil, err
		}
		props.Set(name, sub)
	}
	return props, nil
}

// decodeAny decodes a JSON value, keeping numbers as their text.
func decodeAny(value json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
