package mcplangchaingo

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mcplife/mcplife/session"
)

// errNotArguments is why an input that is not the tool's arguments was
// not sent.
var errNotArguments = errors.New("the input must be a JSON object with the tool's arguments")

// shape is what reading an input needs of a tool's input schema.
type shape struct {
	// only is the name of the schema's one property, "" when it has none
	// or several; onlyString says that property takes a string.
	only       string
	onlyString bool
	// none: the schema has no properties and requires none.
	none bool
}

func shapeOf(schema json.RawMessage) shape {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if len(bytes.TrimSpace(schema)) > 0 && json.Unmarshal(schema, &s) != nil {
		return shape{}
	}
	switch len(s.Properties) {
	case 0:
		return shape{none: len(s.Required) == 0}
	case 1:
		for name, prop := range s.Properties {
			return shape{only: name, onlyString: takesString(prop)}
		}
	}
	return shape{}
}

// takesString says whether a property's schema has type "string", alone
// or among others.
func takesString(prop json.RawMessage) bool {
	var p struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(prop, &p) != nil {
		return false
	}
	var one string
	if json.Unmarshal(p.Type, &one) == nil {
		return one == "string"
	}
	var many []string
	if json.Unmarshal(p.Type, &many) == nil {
		for _, t := range many {
			if t == "string" {
				return true
			}
		}
	}
	return false
}

// arguments reads a tool's input as its JSON arguments, as the package doc
// says.
func arguments(input string, schema json.RawMessage) (json.RawMessage, error) {
	in := unfence(strings.TrimSpace(input))
	if strings.HasPrefix(in, "{") && json.Valid([]byte(in)) {
		return json.RawMessage(in), nil
	}
	sh := shapeOf(schema)
	switch {
	case sh.only != "" && sh.onlyString:
		value := in
		var unquoted string
		if strings.HasPrefix(in, `"`) && json.Unmarshal([]byte(in), &unquoted) == nil {
			value = unquoted
		}
		return json.Marshal(map[string]string{sh.only: value})
	case sh.only != "":
		if in == "" || !json.Valid([]byte(in)) {
			return nil, errNotArguments
		}
		return json.Marshal(map[string]json.RawMessage{sh.only: json.RawMessage(in)})
	case sh.none:
		return json.RawMessage("{}"), nil
	}
	return nil, errNotArguments
}

// unfence removes a Markdown code fence around s, as models write one
// around JSON.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	body := s[3 : len(s)-3]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[\"") {
		body = body[nl+1:] // the info string: ```json
	}
	return strings.TrimSpace(body)
}

// describe is a tool's Description: its own, then how to write its input.
func describe(t session.Tool) string {
	schema := compact(t.InputSchema)
	line := "Input: a JSON object with the tool's arguments, as this JSON schema describes: " + schema
	if sh := shapeOf(t.InputSchema); sh.only != "" && sh.onlyString {
		line += ` (or the value of "` + sh.only + `" alone, as plain text)`
	}
	if t.Description == "" {
		return line
	}
	return t.Description + "\n" + line
}

// compact is a schema as one line of JSON; a missing one is an object of
// no properties.
func compact(schema json.RawMessage) string {
	var b bytes.Buffer
	if len(bytes.TrimSpace(schema)) == 0 || json.Compact(&b, schema) != nil {
		return `{"type":"object"}`
	}
	return b.String()
}
