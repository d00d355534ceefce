package mcpeino

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/manager"
)

// Keys of a part's Extra in a multimodal result.
const (
	// ExtraContent holds the MCP content item a part was made from, as
	// the server sent it (a resource link, an embedded resource, or an
	// item with annotations or _meta), for the program: eino hands a text
	// part's Extra to no model.
	ExtraContent = "mcp.content"
	// ExtraStructured marks the text part that carries the result's
	// structured content as JSON.
	ExtraStructured = "mcp.structured_content"
)

// ToolError is the error of a call whose result has IsError set: the
// tool's own failure (Err nil), or a call that failed on the client side
// (Err is the cause: match it with errors.Is against
// manager.ErrNotConnected, manager.ErrDisconnected, manager.ErrTimeout or
// session.ErrUnknownTool). Result is the whole result.
type ToolError struct {
	Tool   string
	Result *mcp.CallToolResult
	Err    error
}

// Error returns the tool's name and the result's text.
func (e *ToolError) Error() string { return e.Tool + ": " + resultText(e.Result) }

// Unwrap returns the client-side cause, nil for a tool's own failure.
func (e *ToolError) Unwrap() error { return e.Err }

// errorResult is the result of a call that failed on the client side, in
// the form the manager gives one.
func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: manager.ErrorPrefix + err.Error()}}, IsError: true}
}

// textResult renders a result as the text of an InvokableTool.
func textResult(name string, res *manager.CallResult, errorsAsResults bool) (string, error) {
	if res.Result.IsError && !errorsAsResults {
		return "", &ToolError{Tool: name, Result: res.Result, Err: res.Err}
	}
	return resultText(res.Result), nil
}

// resultText is the text of a result: each content item in order, text
// as it is, a resource link and an embedded text resource as text, binary
// content named by kind, MIME type and size; then the structured content
// as JSON, unless a text item already holds that JSON (as a server is
// asked to send it). Items are separated by a blank line.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, linkText(c))
		case *mcp.EmbeddedResource:
			parts = append(parts, resourceText(c.Resource))
		}
	}
	if s, ok := structuredText(r); ok {
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n\n")
}

// partsResult renders a result as the parts of an EnhancedInvokableTool.
func partsResult(name string, res *manager.CallResult, errorsAsResults bool) (*schema.ToolResult, error) {
	r := res.Result
	if r.IsError && !errorsAsResults {
		return nil, &ToolError{Tool: name, Result: r, Err: res.Err}
	}
	out := &schema.ToolResult{}
	for _, c := range r.Content {
		if p, ok := contentPart(c); ok {
			out.Parts = append(out.Parts, p)
		}
	}
	if s, ok := structuredText(r); ok {
		out.Parts = append(out.Parts, schema.ToolOutputPart{Type: schema.ToolPartTypeText, Text: s, Extra: map[string]any{ExtraStructured: true}})
	}
	if len(out.Parts) == 0 {
		// A tool message needs content; an empty result is an empty text.
		out.Parts = []schema.ToolOutputPart{{Type: schema.ToolPartTypeText}}
	}
	return out, nil
}

// contentPart maps one content item to a part.
func contentPart(c mcp.Content) (schema.ToolOutputPart, bool) {
	switch c := c.(type) {
	case *mcp.TextContent:
		return schema.ToolOutputPart{Type: schema.ToolPartTypeText, Text: c.Text, Extra: itemExtra(c, c.Meta, c.Annotations)}, true
	case *mcp.ImageContent:
		return schema.ToolOutputPart{Type: schema.ToolPartTypeImage, Image: &schema.ToolOutputImage{MessagePartCommon: binary(c.Data, c.MIMEType, itemExtra(c, c.Meta, c.Annotations))}}, true
	case *mcp.AudioContent:
		return schema.ToolOutputPart{Type: schema.ToolPartTypeAudio, Audio: &schema.ToolOutputAudio{MessagePartCommon: binary(c.Data, c.MIMEType, itemExtra(c, c.Meta, c.Annotations))}}, true
	case *mcp.ResourceLink:
		return schema.ToolOutputPart{Type: schema.ToolPartTypeText, Text: linkText(c), Extra: map[string]any{ExtraContent: wire(c)}}, true
	case *mcp.EmbeddedResource:
		rc := c.Resource
		if rc != nil && rc.Blob != nil {
			return schema.ToolOutputPart{Type: schema.ToolPartTypeFile, File: &schema.ToolOutputFile{MessagePartCommon: binary(rc.Blob, rc.MIMEType, map[string]any{ExtraContent: wire(c)})}}, true
		}
		return schema.ToolOutputPart{Type: schema.ToolPartTypeText, Text: resourceText(rc), Extra: map[string]any{ExtraContent: wire(c)}}, true
	}
	return schema.ToolOutputPart{}, false
}

// itemExtra holds the item itself when it carries what the part has no
// field for (annotations, _meta); nil otherwise.
func itemExtra(c mcp.Content, meta mcp.Meta, ann *mcp.Annotations) map[string]any {
	if len(meta) == 0 && ann == nil {
		return nil
	}
	return map[string]any{ExtraContent: wire(c)}
}

// binary is the common part of an image, audio or file part. The wire
// form in extra (if any) drops its data, which the part holds already.
func binary(data []byte, mimeType string, extra map[string]any) schema.MessagePartCommon {
	b64 := base64.StdEncoding.EncodeToString(data)
	if m, ok := extra[ExtraContent].(map[string]any); ok {
		delete(m, "data")
		if r, ok := m["resource"].(map[string]any); ok {
			delete(r, "blob")
		}
	}
	return schema.MessagePartCommon{Base64Data: &b64, MIMEType: mimeType, Extra: extra}
}

// wire is a content item in its JSON form, as the server sent it.
func wire(c mcp.Content) map[string]any {
	b, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	var m map[string]any
	if v, err := decodeAny(b); err == nil {
		m, _ = v.(map[string]any)
	}
	return m
}

func linkText(l *mcp.ResourceLink) string {
	var b strings.Builder
	b.WriteString("[resource link ")
	b.WriteString(l.URI)
	if l.Name != "" {
		b.WriteString(" name=" + l.Name)
	}
	if l.MIMEType != "" {
		b.WriteString(" " + l.MIMEType)
	}
	if l.Size != nil {
		fmt.Fprintf(&b, ", %d bytes", *l.Size)
	}
	b.WriteString("]")
	if l.Description != "" {
		b.WriteString(" " + l.Description)
	}
	return b.String()
}

func resourceText(rc *mcp.ResourceContents) string {
	if rc == nil {
		return "[resource]"
	}
	if rc.Blob != nil {
		return fmt.Sprintf("[resource %s %s, %d bytes]", rc.URI, rc.MIMEType, len(rc.Blob))
	}
	return fmt.Sprintf("[resource %s]\n%s", rc.URI, rc.Text)
}

// structuredText is the result's structured content as JSON, and whether
// it is to be shown: not when it is absent or when a text item holds the
// same JSON value already.
func structuredText(r *mcp.CallToolResult) (string, bool) {
	if r.StructuredContent == nil {
		return "", false
	}
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		return "", false
	}
	var want any
	if json.Unmarshal(b, &want) != nil {
		return "", false
	}
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			var got any
			if json.Unmarshal([]byte(t.Text), &got) == nil && reflect.DeepEqual(got, want) {
				return "", false
			}
		}
	}
	return string(b), true
}
