package mcpgenkit

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func text(s string) *mcp.TextContent { return &mcp.TextContent{Text: s} }

// Each kind of result has one Output shape; nothing the server sent is
// dropped except what a Genkit tool response cannot hold.
func TestResponseOutput(t *testing.T) {
	link := &mcp.ResourceLink{URI: "file:///a", Name: "a"}
	linkWire := map[string]any{"type": "resource_link", "uri": "file:///a", "name": "a"}
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want any
	}{
		{"nil", nil, nil},
		{"empty", &mcp.CallToolResult{}, ""},
		{"text", &mcp.CallToolResult{Content: []mcp.Content{text("a")}}, "a"},
		{"texts joined", &mcp.CallToolResult{Content: []mcp.Content{text("a"), text("b")}}, "a\n\nb"},
		{"media beside text", &mcp.CallToolResult{Content: []mcp.Content{text("a"), &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}}}}, "a"},
		{"structured alone",
			&mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}},
			map[string]any{"n": 1.0}},
		{"structured with its serialization",
			&mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}, Content: []mcp.Content{text(`{"n": 1}`)}},
			map[string]any{"n": 1.0}},
		{"structured beside other text",
			&mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}, Content: []mcp.Content{text("one")}},
			map[string]any{"text": "one", "structuredContent": map[string]any{"n": 1.0}}},
		{"structured as json.RawMessage",
			&mcp.CallToolResult{StructuredContent: json.RawMessage(`[1,2]`)},
			[]any{1.0, 2.0}},
		{"resource link",
			&mcp.CallToolResult{Content: []mcp.Content{text("see"), link}},
			map[string]any{"text": "see", "content": []any{linkWire}}},
		{"resource link alone",
			&mcp.CallToolResult{Content: []mcp.Content{link}},
			map[string]any{"content": []any{linkWire}}},
		{"another kind",
			&mcp.CallToolResult{Content: []mcp.Content{&mcp.ToolUseContent{ID: "1", Name: "x", Input: map[string]any{}}}},
			map[string]any{"content": []any{map[string]any{"type": "tool_use", "id": "1", "name": "x", "input": map[string]any{}}}}},
		{"isError",
			&mcp.CallToolResult{IsError: true, Content: []mcp.Content{text("boom")}},
			map[string]any{"error": "boom"}},
		{"isError with more",
			&mcp.CallToolResult{IsError: true, Content: []mcp.Content{text("boom"), link}, StructuredContent: map[string]any{"code": 7}},
			map[string]any{"error": "boom", "structuredContent": map[string]any{"code": 7.0}, "content": []any{linkWire}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := response(tc.res).Output
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Output = %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// A media item without a MIME type is still a valid data: URL.
func TestMediaWithoutMIMEType(t *testing.T) {
	r := response(&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("hi")}}})
	if len(r.Content) != 1 || r.Content[0].ContentType != "application/octet-stream" ||
		r.Content[0].Text != "data:application/octet-stream;base64,aGk=" || r.Content[0].Metadata != nil {
		t.Fatalf("Content = %+v", r.Content)
	}
}

func TestInputSchema(t *testing.T) {
	for raw, want := range map[string]map[string]any{
		``:                  {"type": "object"},
		`null`:              {"type": "object"},
		`[1]`:               {"type": "object"},
		`{"type":"object"}`: {"type": "object"},
		`{"type":"object","properties":{"a":{"type":"integer"}}}`: {"type": "object", "properties": map[string]any{"a": map[string]any{"type": "integer"}}},
	} {
		if got := inputSchema(json.RawMessage(raw)); !reflect.DeepEqual(got, want) {
			t.Errorf("inputSchema(%q) = %v, want %v", raw, got, want)
		}
	}
}
