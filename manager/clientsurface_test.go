package manager

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/manager/internal/transport"
)

// TestEveryContentKindPassesThrough: the fixture's media tool returns
// every content kind with annotations, _meta and icons, plus
// structuredContent and the result's _meta; the go-sdk result the manager
// returns, encoded, is what the server sent.
func TestEveryContentKindPassesThrough(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "fx", "only=media")}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := tool(t, e.m, "mcp_fx_media").Call(ctx, nil)
	if err != nil || r.Result.IsError {
		t.Fatalf("media: %+v %v", r, err)
	}
	if r.Truncated || r.FullOutput != "" {
		t.Errorf("a small result was cut: %+v", r)
	}
	sent, err := json.Marshal(fixture.MediaResult())
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(r.Result)
	if err != nil {
		t.Fatal(err)
	}
	var want, have map[string]any
	if err := json.Unmarshal(sent, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &have); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("result differs from what the server sent (-sent +got):\n%s", diff)
	}
}

// TestToolViewKeepsTitleIconsAnnotationsOutputSchema: a tool's title,
// icons, annotations and output schema reach the manager's tools and the
// recorded list as the server sent them.
func TestToolViewKeepsTitleIconsAnnotationsOutputSchema(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	def := &mcp.Tool{
		Name: "read", Title: "Read a file", Description: "Reads.",
		InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Read"},
		Icons:        []mcp.Icon{{Source: "https://example.com/read.svg", MIMEType: "image/svg+xml", Sizes: []string{"any"}, Theme: "dark"}},
	}
	e.m.dial = func(name string, _ events.ServerConfig, _ transport.Resolved, _ string) (mcp.Transport, error) {
		srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		srv.AddTool(def, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
		st, ct := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "files", Command: "x"}}, nil); err != nil {
		t.Fatal(err)
	}
	tl := tool(t, e.m, "mcp_files_read")
	jsonEq := func(what string, got json.RawMessage, want any) {
		t.Helper()
		b, _ := json.Marshal(want)
		var w, g any
		json.Unmarshal(b, &w)
		if err := json.Unmarshal(got, &g); err != nil {
			t.Errorf("%s: %s: %v", what, got, err)
			return
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s (-sent +got):\n%s", what, diff)
		}
	}
	if tl.Title != "Read a file" {
		t.Errorf("Title = %q", tl.Title)
	}
	jsonEq("icons", tl.Icons, def.Icons)
	jsonEq("annotations", tl.Annotations, def.Annotations)
	jsonEq("output schema", tl.OutputSchema, def.OutputSchema)
	listed := ofType[*events.ToolsListed](e, "s1")
	if len(listed) != 1 || len(listed[0].Tools) != 1 {
		t.Fatalf("ToolsListed %+v", listed)
	}
	jsonEq("recorded icons", listed[0].Tools[0].Icons, def.Icons)
	if listed[0].ToolsHash != events.HashTools(listed[0].Tools) {
		t.Error("the recorded hash is not the hash of the recorded tools")
	}
}
