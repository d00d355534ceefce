package mcplangchaingo

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolError is the error of a call whose result has isError set, returned
// with [Options.ReturnErrors]: the tool's own failure (Err nil), or a call
// that failed on the client side (Err is the cause: match it with
// errors.Is against manager.ErrNotConnected, manager.ErrDisconnected,
// manager.ErrTimeout, or session.ErrUnknownTool for a name the session
// does not hold). Result is the whole result, every content item as the
// server sent it.
type ToolError struct {
	Tool   string
	Result *mcp.CallToolResult
	Err    error
}

// Error returns the tool's name and the result's text.
func (e *ToolError) Error() string { return e.Tool + ": " + ResultText(e.Result) }

// Unwrap returns the client-side cause, nil for a tool's own failure.
func (e *ToolError) Unwrap() error { return e.Err }

// ResultText renders a tool result as the text a langchaingo tool returns,
// one line (or block) per content item in order, as the package doc
// describes, then the structured content as JSON when no text item holds
// it already. It does not mark isError results; a nil result is "".
func ResultText(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, contentText(c))
	}
	if r.StructuredContent != nil {
		if js, err := json.Marshal(r.StructuredContent); err == nil && !holdsJSON(r.Content, js) {
			parts = append(parts, string(js))
		}
	}
	return strings.Join(parts, "\n")
}

// contentText is one content item as text.
func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return bracket("image", c.MIMEType, size(len(c.Data)))
	case *mcp.AudioContent:
		return bracket("audio", c.MIMEType, size(len(c.Data)))
	case *mcp.ResourceLink:
		var sz string
		if c.Size != nil {
			sz = size64(*c.Size)
		}
		return bracket("resource link", c.URI, labelled("name", c.Name), labelled("title", c.Title),
			c.MIMEType, sz, labelled("description", c.Description))
	case *mcp.EmbeddedResource:
		rc := c.Resource
		if rc == nil {
			return bracket("embedded resource")
		}
		if rc.Blob != nil {
			return bracket("embedded resource", rc.URI, rc.MIMEType, size(len(rc.Blob)))
		}
		head := bracket("embedded resource", rc.URI, rc.MIMEType)
		if rc.Text == "" {
			return head
		}
		return head + "\n" + rc.Text
	case nil:
		return ""
	default:
		// A kind this version does not know: its JSON, which says it all.
		js, err := json.Marshal(c)
		if err != nil {
			return bracket(fmt.Sprintf("%T", c))
		}
		return string(js)
	}
}

// bracket is "[kind: field, field]" of the fields that are not empty.
func bracket(kind string, fields ...string) string {
	var kept []string
	for _, f := range fields {
		if f != "" {
			kept = append(kept, f)
		}
	}
	if len(kept) == 0 {
		return "[" + kind + "]"
	}
	return "[" + kind + ": " + strings.Join(kept, ", ") + "]"
}

func labelled(label, value string) string {
	if value == "" {
		return ""
	}
	return label + " " + value
}

func size(n int) string { return size64(int64(n)) }

func size64(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// holdsJSON says whether one of the text items is the JSON value js.
func holdsJSON(content []mcp.Content, js []byte) bool {
	var want any
	if json.Unmarshal(js, &want) != nil {
		return false
	}
	for _, c := range content {
		t, ok := c.(*mcp.TextContent)
		if !ok {
			continue
		}
		var got any
		if json.Unmarshal([]byte(t.Text), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}
