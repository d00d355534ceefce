package mcpgenkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"

	mcpgenkit "github.com/mcplife/mcplife/adapters/genkit"
)

type nameArgs struct {
	Name string `json:"name"`
}

type pair struct {
	A int `json:"a"`
	B int `json:"b"`
}

type total struct {
	Sum int `json:"sum"`
}

func server(name string) *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
}

func addEcho(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Says text back."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
}

// A server that connects after the startup gate reaches the Genkit loop:
// its cached tool is offered (and callable) while it connects, its live
// list adds a tool once it is connected, and a list it changes later
// (a tool added, one removed, announced by list_changed) is what the next
// Generate call offers and calls.
func TestLateServerAndListChangeReachTheLoop(t *testing.T) {
	early := server("early")
	addEcho(early)
	late := server("late")
	mcp.AddTool(late, &mcp.Tool{Name: "add"}, func(ctx context.Context, req *mcp.CallToolRequest, in pair) (*mcp.CallToolResult, any, error) {
		return textResult(fmt.Sprint(in.A + in.B)), nil, nil
	})
	mcp.AddTool(late, &mcp.Tool{Name: "hello"}, func(ctx context.Context, req *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, any, error) {
		return textResult("hello, " + in.Name), nil, nil
	})
	release := make(chan struct{})
	s := fixture{
		servers: map[string]*mcp.Server{"early": early, "late": late},
		held:    map[string]chan struct{}{"late": release},
		cached:  map[string][]string{"late": {"add"}},
	}.start(t)
	g, sm := newScripted(t)
	ctx := t.Context()

	// At the gate the late server is still dialing: its cached tool is
	// offered, deferred; the tool only its live list has is not.
	if tool, ok := s.Tool("mcp_late_add"); !ok || !tool.MCP.Deferred {
		t.Fatalf("at the gate: tools %v", toolNames(s.Tools()))
	}
	got, err := sm.ask(ctx, g, mcpgenkit.WithTools(s), call{Tool: "mcp_late_hello", Input: nameArgs{"Ada"}})
	if err != nil || got != "not offered: mcp_late_hello" {
		t.Fatalf("hello before the late server connected: %q, %v", got, err)
	}
	if tools := sm.lastTurn().Tools; !slices.Contains(tools, "mcp_early_echo") || !slices.Contains(tools, "mcp_late_add") {
		t.Fatalf("offered at the gate: %v", tools)
	}

	// A call of the deferred tool waits for the connection, which the
	// test lets happen while the call is under way (or about to be).
	type answer struct {
		text string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		text, err := sm.ask(ctx, g, mcpgenkit.WithTools(s), call{Tool: "mcp_late_add", Input: pair{2, 3}})
		answered <- answer{text, err}
	}()
	close(release)
	if a := <-answered; a.err != nil || a.text != `"5"` {
		t.Fatalf("deferred mcp_late_add: %q, %v", a.text, a.err)
	}

	waitFor(t, s, "the late server's live list", func() bool {
		tool, ok := s.Tool("mcp_late_add")
		return ok && !tool.MCP.Deferred && offered(s, "mcp_late_hello")
	})
	got, err = sm.ask(ctx, g, mcpgenkit.WithTools(s), call{Tool: "mcp_late_hello", Input: nameArgs{"Ada"}})
	if err != nil || got != `"hello, Ada"` {
		t.Fatalf("mcp_late_hello once connected: %q, %v", got, err)
	}

	// The server changes its list; the go-sdk server sends list_changed.
	before := mcpgenkit.WithTools(s)
	mcp.AddTool(late, &mcp.Tool{Name: "mul"}, func(ctx context.Context, req *mcp.CallToolRequest, in pair) (*mcp.CallToolResult, any, error) {
		return textResult(fmt.Sprint(in.A * in.B)), nil, nil
	})
	late.RemoveTools("add")
	waitFor(t, s, "the changed list", func() bool {
		return offered(s, "mcp_late_mul") && !offered(s, "mcp_late_add")
	})
	got, err = sm.ask(ctx, g, mcpgenkit.WithTools(s), call{Tool: "mcp_late_mul", Input: pair{6, 7}})
	if err != nil || got != `"42"` {
		t.Fatalf("mcp_late_mul after the change: %q, %v", got, err)
	}
	if tools := sm.lastTurn().Tools; slices.Contains(tools, "mcp_late_add") || !slices.Contains(tools, "mcp_late_hello") {
		t.Fatalf("offered after the change: %v", tools)
	}
	got, err = sm.ask(ctx, g, mcpgenkit.WithTools(s), call{Tool: "mcp_late_add", Input: pair{1, 1}})
	if err != nil || got != "not offered: mcp_late_add" {
		t.Fatalf("removed mcp_late_add: %q, %v", got, err)
	}
	// Tools built before the change still answer: the removed tool's call
	// is an error result the model reads.
	got, err = sm.ask(ctx, g, before, call{Tool: "mcp_late_add", Input: pair{1, 1}})
	if err != nil || !strings.HasPrefix(got, `{"error":`) {
		t.Fatalf("removed mcp_late_add through tools built before: %q, %v", got, err)
	}
}

// Cancelling the Generate call's context cancels the MCP call on the
// server, and the Generate call ends with the cancellation (in Genkit's
// own error, which holds the cause's text but does not wrap it).
func TestCancelledGenerateCancelsTheCall(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	srv := server("main")
	mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, nil, ctx.Err()
	})
	s := fixture{servers: map[string]*mcp.Server{"main": srv}}.start(t)
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, sm := newScripted(t)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	failed := make(chan error, 1)
	go func() {
		_, err := sm.ask(ctx, g, mcpgenkit.WithTools(s), call{Tool: "mcp_main_wait"})
		failed <- err
	}()
	select {
	case <-started:
	case err := <-failed:
		t.Fatalf("Generate ended before the tool was called: %v", err)
	}
	cancel()
	select {
	case <-cancelled:
	case <-t.Context().Done():
		t.Fatal("the server's handler never saw the cancellation")
	}
	err := <-failed
	if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("Generate after cancel: %v", err)
	}
}

// An isError result, the server's or the manager's for a client-side
// failure, reaches the model as {"error": text}; the loop goes on.
func TestIsErrorResultReachesTheModel(t *testing.T) {
	srv := server("main")
	mcp.AddTool(srv, &mcp.Tool{Name: "fail"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("disk full")
	})
	// A raw handler's error is a protocol error, which the manager turns
	// into an isError result with its own prefix.
	srv.AddTool(&mcp.Tool{Name: "broken", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("wires crossed")
		})
	s := fixture{servers: map[string]*mcp.Server{"main": srv}}.start(t)
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, sm := newScripted(t)

	got, err := sm.ask(t.Context(), g, mcpgenkit.WithTools(s), call{Tool: "mcp_main_fail"})
	if err != nil || got != `{"error":"disk full"}` {
		t.Fatalf("server isError: %q, %v", got, err)
	}
	got, err = sm.ask(t.Context(), g, mcpgenkit.WithTools(s), call{Tool: "mcp_main_broken"})
	var out struct {
		Error string `json:"error"`
	}
	if err != nil || json.Unmarshal([]byte(got), &out) != nil ||
		!strings.HasPrefix(out.Error, manager.ErrorPrefix) || !strings.Contains(out.Error, "wires crossed") {
		t.Fatalf("client-side isError: %q, %v", got, err)
	}
}

// Structured content becomes the tool's Output; images, audio and an
// embedded blob reach the model as media parts, and resource links and
// embedded resources stay in Output in their MCP form.
func TestStructuredAndNonTextContent(t *testing.T) {
	srv := server("main")
	mcp.AddTool(srv, &mcp.Tool{Name: "sum"}, func(ctx context.Context, req *mcp.CallToolRequest, in pair) (*mcp.CallToolResult, total, error) {
		return nil, total{in.A + in.B}, nil
	})
	png := []byte("\x89PNG fake")
	wav := []byte("RIFF fake")
	pdf := []byte("%PDF fake")
	srv.AddTool(&mcp.Tool{Name: "mixed", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "see attached"},
				&mcp.ImageContent{Data: png, MIMEType: "image/png", Annotations: &mcp.Annotations{Priority: 0.5}},
				&mcp.AudioContent{Data: wav, MIMEType: "audio/wav"},
				&mcp.ResourceLink{URI: "file:///report.txt", Name: "report", MIMEType: "text/plain"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.md", MIMEType: "text/markdown", Text: "# notes"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///scan.pdf", MIMEType: "application/pdf", Blob: pdf}},
			}}, nil
		})
	s := fixture{servers: map[string]*mcp.Server{"main": srv}}.start(t)
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, sm := newScripted(t)

	got, err := sm.ask(t.Context(), g, mcpgenkit.WithTools(s), call{Tool: "mcp_main_sum", Input: pair{1, 2}})
	if err != nil || got != `{"sum":3}` {
		t.Fatalf("structured: %q, %v", got, err)
	}

	if _, err := sm.ask(t.Context(), g, mcpgenkit.WithTools(s), call{Tool: "mcp_main_mixed"}); err != nil {
		t.Fatal(err)
	}
	resp := sm.lastTurn().Responses[0]
	wantOutput := map[string]any{
		"text": "see attached",
		"content": []any{
			map[string]any{"type": "resource_link", "uri": "file:///report.txt", "name": "report", "mimeType": "text/plain"},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# notes"}},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///scan.pdf", "mimeType": "application/pdf"}},
		},
	}
	if !reflect.DeepEqual(resp.Output, wantOutput) {
		t.Errorf("mixed Output = %#v\nwant %#v", resp.Output, wantOutput)
	}
	var media []string
	for _, p := range resp.Content {
		if !p.IsMedia() {
			t.Errorf("content part of kind %v, want media only", p.Kind)
			continue
		}
		media = append(media, p.ContentType+" "+p.Text)
	}
	want := []string{
		"image/png " + dataURL("image/png", png),
		"audio/wav " + dataURL("audio/wav", wav),
		"application/pdf " + dataURL("application/pdf", pdf),
	}
	if !slices.Equal(media, want) {
		t.Errorf("media parts = %q\nwant %q", media, want)
	}
	if len(resp.Content) == 3 {
		if a, ok := resp.Content[0].Metadata["annotations"].(map[string]any); !ok || a["priority"] != 0.5 {
			t.Errorf("image metadata = %v, want its annotations", resp.Content[0].Metadata)
		}
		if uri := resp.Content[2].Metadata["uri"]; uri != "file:///scan.pdf" {
			t.Errorf("blob metadata = %v, want its uri", resp.Content[2].Metadata)
		}
	}
}

func dataURL(mime string, b []byte) string {
	enc, _ := json.Marshal(b) // base64, quoted
	return "data:" + mime + ";base64," + strings.Trim(string(enc), `"`)
}

// The input schema reaches the model's tool definition as the server
// sent it (a 2020-12 schema with $defs and a $ref), and Genkit's check of
// the input against it lets a matching call through.
func TestInputSchemaPassesThrough(t *testing.T) {
	schema := `{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"properties": {"who": {"$ref": "#/$defs/person"}, "times": {"type": "integer", "minimum": 1}},
		"required": ["who"],
		"$defs": {"person": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
	}`
	srv := server("main")
	srv.AddTool(&mcp.Tool{Name: "greet", Description: "Greets a person.", InputSchema: json.RawMessage(schema)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("got " + string(req.Params.Arguments)), nil
		})
	s := fixture{servers: map[string]*mcp.Server{"main": srv}}.start(t)
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, sm := newScripted(t)

	got, err := sm.ask(t.Context(), g, mcpgenkit.WithTools(s), call{Tool: "mcp_main_greet", Input: map[string]any{"who": map[string]any{"name": "Ada"}, "times": 2}})
	if err != nil || got != `"got {\"times\":2,\"who\":{\"name\":\"Ada\"}}"` {
		t.Fatalf("greet: %q, %v", got, err)
	}
	def := sm.defs("mcp_main_greet")
	if def == nil {
		t.Fatal("the model was not offered mcp_main_greet")
	}
	var want map[string]any
	json.Unmarshal([]byte(schema), &want)
	if !reflect.DeepEqual(def.InputSchema, want) || def.Description != "Greets a person." {
		t.Errorf("definition = %q %#v\nwant schema %#v", def.Description, def.InputSchema, want)
	}
}

// The agent's own session tools and the host's own Genkit tools are
// offered beside the MCP tools and called the same way.
func TestOwnToolsBesideMCPTools(t *testing.T) {
	srv := server("main")
	addEcho(srv)
	readFile := session.Tool{
		Name:        "read_file",
		Description: "the agent's own tool",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
		Call: func(ctx context.Context, args json.RawMessage) (*manager.CallResult, error) {
			return &manager.CallResult{Result: textResult("read " + string(args))}, nil
		},
	}
	s := fixture{servers: map[string]*mcp.Server{"main": srv}, own: []session.Tool{readFile}}.start(t)
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, sm := newScripted(t)
	clock := ai.NewTool("clock", "Tells the time.", func(ctx *ai.ToolContext, _ any) (string, error) {
		return "noon", nil
	})

	for _, tc := range []struct {
		call call
		want string
	}{
		{call{Tool: "read_file", Input: map[string]any{"path": "a.txt"}}, `"read {\"path\":\"a.txt\"}"`},
		{call{Tool: "clock"}, `"noon"`},
		{call{Tool: "mcp_main_echo", Input: map[string]any{"text": "hi"}}, `"hi"`},
	} {
		got, err := sm.ask(t.Context(), g, mcpgenkit.WithTools(s, clock), tc.call)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.call.Tool, got, err, tc.want)
		}
	}
	if tools, want := sm.lastTurn().Tools, []string{"read_file", "mcp_main_echo", "clock"}; !sameSet(tools, want) {
		t.Errorf("offered %v, want %v", tools, want)
	}
	if names := toolRefNames(mcpgenkit.Tools(s)); !slices.Equal(names, []string{"read_file", "mcp_main_echo"}) {
		t.Errorf("Tools = %v, want the session's order", names)
	}

	// A session tool without a Call is a host's mistake: the Generate
	// call ends with it.
	broken := mcpgenkit.Tool(session.Tool{Name: "broken"})
	if _, err := sm.ask(t.Context(), g, ai.WithTools(broken), call{Tool: "broken"}); err == nil || !strings.Contains(err.Error(), "has no Call") {
		t.Errorf("tool without Call: %v", err)
	}

	// A narrowed active set is what Genkit gets.
	s.SetActive([]string{"mcp_main_echo"})
	if names := toolRefNames(mcpgenkit.Tools(s)); !slices.Equal(names, []string{"mcp_main_echo"}) {
		t.Errorf("Tools after SetActive = %v", names)
	}
}

func toolRefNames(ts []ai.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

// sameSet reports whether a and b hold the same names in any order:
// Genkit offers a call's tools in map order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// The input reaches the server as the model sent it: Genkit does not
// check it against the schema or drop its null fields, and no input is an
// empty object. A wrong input is the server's to refuse, as an isError
// result the model reads, rather than the end of the Generate call.
func TestInputReachesTheServerAsSent(t *testing.T) {
	srv := server("main")
	srv.AddTool(&mcp.Tool{Name: "args", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":["string","null"]}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(string(req.Params.Arguments)), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "hello"}, func(ctx context.Context, req *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, any, error) {
		return textResult("hello, " + in.Name), nil, nil
	})
	s := fixture{servers: map[string]*mcp.Server{"main": srv}}.start(t)
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, sm := newScripted(t)

	for _, tc := range []struct {
		name string
		call call
		want string
	}{
		{"null field", call{Tool: "mcp_main_args", Input: map[string]any{"a": nil}}, `"{\"a\":null}"`},
		{"no input", call{Tool: "mcp_main_args", NoInput: true}, `"{}"`},
		{"empty input", call{Tool: "mcp_main_args"}, `"{}"`},
	} {
		got, err := sm.ask(t.Context(), g, mcpgenkit.WithTools(s), tc.call)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	got, err := sm.ask(t.Context(), g, mcpgenkit.WithTools(s), call{Tool: "mcp_main_hello", Input: map[string]any{"name": 5}})
	var out struct {
		Error string `json:"error"`
	}
	if err != nil || json.Unmarshal([]byte(got), &out) != nil || out.Error == "" {
		t.Fatalf("wrong input: %q, %v; want the server's error", got, err)
	}
}

// One option (and so one set of tool values) may serve Generate calls
// that run at the same time: registering a tool records nothing on it.
func TestToolsShareableAcrossConcurrentGenerateCalls(t *testing.T) {
	srv := server("main")
	addEcho(srv)
	s := fixture{servers: map[string]*mcp.Server{"main": srv}}.start(t)
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	g, sm := newScripted(t)
	opt := mcpgenkit.WithTools(s)
	errs := make(chan error, 4)
	for i := range cap(errs) {
		go func() {
			text := fmt.Sprint("hi ", i)
			got, err := sm.ask(t.Context(), g, opt, call{Tool: "mcp_main_echo", Input: map[string]any{"text": text}})
			if err == nil && got != fmt.Sprintf("%q", text) {
				err = fmt.Errorf("got %s, want %q", got, text)
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The parts that answer or re-run a tool request, which a host builds
// when it stops the loop at the requests (ai.WithReturnToolRequests),
// come out as Genkit's tools build them.
func TestRespondAndRestart(t *testing.T) {
	tool := mcpgenkit.Tool(session.Tool{Name: "mcp_main_echo"})
	req := ai.NewToolRequestPart(&ai.ToolRequest{Name: "mcp_main_echo", Ref: "r1", Input: map[string]any{"text": "hi"}})
	resp := tool.Respond(req, "answered by the host", nil)
	if resp == nil || !resp.IsToolResponse() || resp.ToolResponse.Ref != "r1" || resp.ToolResponse.Output != "answered by the host" {
		t.Errorf("Respond = %+v", resp)
	}
	again := tool.Restart(req, &ai.RestartOptions{ReplaceInput: map[string]any{"text": "again"}})
	if again == nil || !again.IsToolRequest() || !reflect.DeepEqual(again.ToolRequest.Input, map[string]any{"text": "again"}) {
		t.Errorf("Restart = %+v", again)
	}
	if tool.Respond(ai.NewTextPart("not a request"), nil, nil) != nil {
		t.Error("Respond answered a text part")
	}
}
