package manager

import (
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Content types of [Content].
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource"
)

// ErrorPrefix starts the text of every result that reports a transport or
// tool error raised on the client side.
const ErrorPrefix = "MCP error: "

// Content is one item of a tool result, in the MCP wire shape: marshalled to
// JSON it reads like the server's content item (Data and Blob as base64).
type Content struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"` // text
	// Data and MIMEType: image and audio bytes (decoded) and their type;
	// MIMEType also describes a resource link.
	Data     []byte `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	// Resource link fields.
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// Icons of a resource link, as the server sent them.
	Icons json.RawMessage `json:"icons,omitempty"`
	// Resource is the embedded resource of a "resource" item.
	Resource *ResourceContents `json:"resource,omitempty"`
	// Annotations and Meta (_meta) as the server sent them.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON writes c in the MCP wire shape: the fields the protocol
// requires of its type are present even when empty ("text" of a text
// item, "data" and "mimeType" of image and audio).
func (c Content) MarshalJSON() ([]byte, error) {
	type plain Content // without this method
	switch c.Type {
	case ContentText:
		return json.Marshal(struct {
			plain
			Text string `json:"text"`
		}{plain(c), c.Text})
	case ContentImage, ContentAudio:
		data := c.Data
		if data == nil {
			data = []byte{}
		}
		return json.Marshal(struct {
			plain
			Data     []byte `json:"data"`
			MIMEType string `json:"mimeType"`
		}{plain(c), data, c.MIMEType})
	}
	return json.Marshal(plain(c))
}

// ResourceContents is an embedded resource: text or binary.
type ResourceContents struct {
	URI      string          `json:"uri"`
	MIMEType string          `json:"mimeType,omitempty"`
	Text     string          `json:"text,omitempty"`
	Blob     []byte          `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

// CallResult is the full result of a tool call.
type CallResult struct {
	Content []Content `json:"content"`
	// StructuredContent is the result's structuredContent, as JSON; nil
	// when the server sent none.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// Meta is the result's _meta as the server sent it.
	Meta json.RawMessage `json:"_meta,omitempty"`
	// Truncated: the result's text was over its server's output budget
	// and is cut; its last item is a text marker that says so and names
	// FullOutput, the file holding the whole result ("" when it could not
	// be written; the marker then says why).
	Truncated  bool   `json:"truncated,omitempty"`
	FullOutput string `json:"fullOutput,omitempty"`
}

// Text returns the text items of r joined by blank lines.
func (r *CallResult) Text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == ContentText {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// errorResult returns the result of a call that failed before or outside
// the tool: one text item starting with [ErrorPrefix].
func errorResult(msg string) *CallResult {
	return &CallResult{Content: []Content{{Type: ContentText, Text: ErrorPrefix + msg}}, IsError: true}
}

// convertResult turns a go-sdk result into a [CallResult], keeping every
// item. Content types this version does not know are kept as text items
// holding their JSON.
func convertResult(r *mcp.CallToolResult) *CallResult {
	out := &CallResult{Content: make([]Content, 0, len(r.Content)), IsError: r.IsError}
	for _, c := range r.Content {
		out.Content = append(out.Content, convertContent(c))
	}
	if r.StructuredContent != nil {
		if raw, ok := r.StructuredContent.(json.RawMessage); ok {
			out.StructuredContent = raw
		} else if b, err := json.Marshal(r.StructuredContent); err == nil {
			out.StructuredContent = b
		}
	}
	out.Meta = meta(r.Meta)
	return out
}

func convertContent(c mcp.Content) Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		return Content{Type: ContentText, Text: c.Text, Annotations: annotations(c.Annotations), Meta: meta(c.Meta)}
	case *mcp.ImageContent:
		return Content{Type: ContentImage, Data: c.Data, MIMEType: c.MIMEType, Annotations: annotations(c.Annotations), Meta: meta(c.Meta)}
	case *mcp.AudioContent:
		return Content{Type: ContentAudio, Data: c.Data, MIMEType: c.MIMEType, Annotations: annotations(c.Annotations), Meta: meta(c.Meta)}
	case *mcp.ResourceLink:
		out := Content{Type: ContentResourceLink, URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description,
			MIMEType: c.MIMEType, Size: c.Size, Annotations: annotations(c.Annotations), Meta: meta(c.Meta)}
		if len(c.Icons) > 0 {
			out.Icons = rawJSON(c.Icons)
		}
		return out
	case *mcp.EmbeddedResource:
		out := Content{Type: ContentResource, Annotations: annotations(c.Annotations), Meta: meta(c.Meta)}
		if c.Resource != nil {
			out.Resource = &ResourceContents{URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text, Blob: c.Resource.Blob, Meta: meta(c.Resource.Meta)}
		}
		return out
	default:
		b, _ := c.MarshalJSON()
		return Content{Type: ContentText, Text: string(b)}
	}
}

func annotations(a *mcp.Annotations) json.RawMessage {
	if a == nil {
		return nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil
	}
	return b
}

// meta returns a _meta object as JSON, nil when there is none.
func meta(m mcp.Meta) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	return rawJSON(map[string]any(m))
}
