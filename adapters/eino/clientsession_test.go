package mcpeino_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpeino "github.com/mcplife/mcplife/adapters/eino"
	"github.com/mcplife/mcplife/session"
)

// The two methods eino-ext's MCP tools take from a go-sdk client session
// (officialmcp.ClientSession); the adapter does not import eino-ext, so
// the shape is checked here.
type officialClientSession interface {
	ListTools(ctx context.Context, params *mcp.ListToolsParams) (*mcp.ListToolsResult, error)
	CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error)
}

var _ officialClientSession = (*mcpeino.ClientSession)(nil)

const rawSchema = `{"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"],"x-extra":[1,2]}`

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	return reflect.DeepEqual(decodeJSON(t, a), decodeJSON(t, b))
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func schemaFixture(t *testing.T) *session.Session {
	f := newFixture(false)
	readOnly := true
	f.server.AddTool(&mcp.Tool{Name: "say", Description: "Says it.", InputSchema: json.RawMessage(rawSchema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, Title: "Say"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "said " + args.Text}}}, nil
		})
	f.addResultTool("fail", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}})
	s := f.start(t)
	if err := s.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// Info carries the server's schema as sent, and names the tool's server,
// own name and annotations in Extra.
func TestInfo(t *testing.T) {
	s := schemaFixture(t)
	info, err := named(t, mcpeino.Tools(s, nil), "mcp_demo_say").Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	js, err := info.ToJSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(js)
	if info.Desc != "Says it." || !sameJSON(t, got, []byte(rawSchema)) {
		t.Errorf("info: desc %q, schema %s", info.Desc, got)
	}
	if info.Extra[mcpeino.ExtraServerName] != "demo" || info.Extra[mcpeino.ExtraRawToolName] != "say" ||
		info.Extra[mcpeino.ExtraExposedToolName] != "mcp_demo_say" {
		t.Errorf("extra: %v", info.Extra)
	}
	if ann, _ := info.Extra[mcpeino.ExtraAnnotations].(map[string]any); ann["readOnlyHint"] != true || ann["title"] != "Say" {
		t.Errorf("annotations: %v", info.Extra[mcpeino.ExtraAnnotations])
	}
}

// A ClientSession lists and calls one server's tools under their own
// names, as a go-sdk session to that server would.
func TestClientSession(t *testing.T) {
	ctx := context.Background()
	s := schemaFixture(t)
	cs := mcpeino.NewClientSession(s, "demo")

	list, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range list.Tools {
		byName[tl.Name] = tl
	}
	say := byName["say"]
	if len(list.Tools) != 2 || say == nil || byName["fail"] == nil || list.NextCursor != "" {
		t.Fatalf("tools: %+v", list.Tools)
	}
	sch, _ := json.Marshal(say.InputSchema)
	if say.Description != "Says it." || !sameJSON(t, sch, []byte(rawSchema)) || say.Annotations == nil || !say.Annotations.ReadOnlyHint {
		t.Errorf("say: %+v, schema %s", say, sch)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "say", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "said hi" {
		t.Fatalf("call: %+v, %v", res, err)
	}
	// A tool's own failure is a result, as from a go-sdk session.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail"}); err != nil || !res.IsError {
		t.Fatalf("failing tool: %+v, %v", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope"}); !errors.Is(err, session.ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
	if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: "2"}); err == nil {
		t.Fatal("a cursor was taken")
	}
	other, err := mcpeino.NewClientSession(s, "other").ListTools(ctx, nil)
	if err != nil || len(other.Tools) != 0 {
		t.Fatalf("a server the session does not have: %+v, %v", other, err)
	}
}
