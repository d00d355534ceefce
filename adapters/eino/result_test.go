package mcpeino_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpeino "github.com/mcplife/mcplife/adapters/eino"
)

// mixedResult holds every content kind and structured content that no
// text item repeats.
func mixedResult() *mcp.CallToolResult {
	size := int64(42)
	return &mcp.CallToolResult{
		Content: []mcp.Content{
			&mcp.TextContent{Text: "hello"},
			&mcp.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte("WAV"), MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "file:///r.txt", Name: "r", MIMEType: "text/plain", Size: &size},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///t.txt", MIMEType: "text/plain", Text: "inside"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.bin", MIMEType: "application/octet-stream", Blob: []byte("BIN")}},
		},
		StructuredContent: map[string]any{"n": 1},
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// Text tools name binary content and carry the rest as text; structured
// content follows as JSON.
func TestTextResult(t *testing.T) {
	ctx := context.Background()
	f := newFixture(false)
	f.addResultTool("mixed", mixedResult())
	f.addResultTool("echoed", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"n": 1}`}}, StructuredContent: map[string]any{"n": 1}})
	s := f.start(t)
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	tools := mcpeino.Tools(s, nil)
	got, err := named(t, tools, "mcp_demo_mixed").(tool.InvokableTool).InvokableRun(ctx, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	want := "hello\n\n[image image/png, 3 bytes]\n\n[audio audio/wav, 3 bytes]\n\n" +
		"[resource link file:///r.txt name=r text/plain, 42 bytes]\n\n[resource file:///t.txt]\ninside\n\n" +
		"[resource file:///b.bin application/octet-stream, 3 bytes]\n\n{\"n\":1}"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	// A text item holding the structured content already is not repeated.
	got, err = named(t, tools, "mcp_demo_echoed").(tool.InvokableTool).InvokableRun(ctx, `{}`)
	if err != nil || got != `{"n": 1}` {
		t.Errorf("structured content in a text item: %q, %v", got, err)
	}
}

// Multimodal tools give each content item a part: images, audio and
// blobs as data, links and text resources as text with the item in Extra;
// through the react agent the model receives the parts.
func TestMultimodalResult(t *testing.T) {
	ctx := context.Background()
	f := newFixture(false)
	f.addResultTool("mixed", mixedResult())
	s := f.start(t)
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	tools := mcpeino.Tools(s, &mcpeino.Options{Multimodal: true})
	et, ok := tools[0].(tool.EnhancedInvokableTool)
	if !ok {
		t.Fatalf("%T is not an EnhancedInvokableTool", tools[0])
	}
	if _, ok := tools[0].(tool.InvokableTool); ok {
		t.Fatal("a multimodal tool is an InvokableTool too: the ToolsNode would not know which to run")
	}
	res, err := et.InvokableRun(ctx, &schema.ToolArgument{Text: `{}`})
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	want := []schema.ToolOutputPart{
		{Type: schema.ToolPartTypeText, Text: "hello"},
		{Type: schema.ToolPartTypeImage, Image: &schema.ToolOutputImage{MessagePartCommon: schema.MessagePartCommon{Base64Data: str(b64("PNG")), MIMEType: "image/png"}}},
		{Type: schema.ToolPartTypeAudio, Audio: &schema.ToolOutputAudio{MessagePartCommon: schema.MessagePartCommon{Base64Data: str(b64("WAV")), MIMEType: "audio/wav"}}},
		{Type: schema.ToolPartTypeText, Text: "[resource link file:///r.txt name=r text/plain, 42 bytes]", Extra: map[string]any{mcpeino.ExtraContent: map[string]any{
			"type": "resource_link", "uri": "file:///r.txt", "name": "r", "mimeType": "text/plain", "size": jsonNumber("42")}}},
		{Type: schema.ToolPartTypeText, Text: "[resource file:///t.txt]\ninside", Extra: map[string]any{mcpeino.ExtraContent: map[string]any{
			"type": "resource", "resource": map[string]any{"uri": "file:///t.txt", "mimeType": "text/plain", "text": "inside"}}}},
		{Type: schema.ToolPartTypeFile, File: &schema.ToolOutputFile{MessagePartCommon: schema.MessagePartCommon{Base64Data: str(b64("BIN")), MIMEType: "application/octet-stream",
			Extra: map[string]any{mcpeino.ExtraContent: map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///b.bin", "mimeType": "application/octet-stream"}}}}}},
		{Type: schema.ToolPartTypeText, Text: `{"n":1}`, Extra: map[string]any{mcpeino.ExtraStructured: true}},
	}
	if diff := cmp.Diff(want, res.Parts); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}

	m := newScriptedModel(callNamed("mcp_demo_mixed", `{}`))
	got := mustAnswer(t, ctx, s, m, &mcpeino.Options{Multimodal: true})
	wantAnswer := "the tool said: hello | <image_url image/png " + b64("PNG") + "> | <audio_url audio/wav " + b64("WAV") + "> | " +
		"[resource link file:///r.txt name=r text/plain, 42 bytes] | [resource file:///t.txt]\ninside | " +
		"<file_url application/octet-stream " + b64("BIN") + "> | {\"n\":1}"
	if got != wantAnswer {
		t.Errorf("the model read %q\nwant %q", got, wantAnswer)
	}
}
