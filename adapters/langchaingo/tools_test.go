package mcplangchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/callbacks"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/tools"

	mcplangchaingo "github.com/mcplife/mcplife/adapters/langchaingo"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// runReAct runs langchaingo's MRKL agent over the session's tools now,
// with a fake model that calls tool with input and answers with the
// observation.
func runReAct(ctx context.Context, s *session.Session, opts *mcplangchaingo.Options, tool, input string) (string, *reactModel, error) {
	m := &reactModel{tool: tool, input: input}
	agent := agents.NewOneShotAgent(m, mcplangchaingo.Tools(s, opts))
	out, err := chains.Run(ctx, agents.NewExecutor(agent, agents.WithMaxIterations(3)), "Do it.")
	return out, m, err
}

// A server that connects after the startup gate, then adds a tool and
// removes one (list_changed each time). Its cached tools are served from
// the gate on, and the agent's call of one goes through once the server
// connects; the agent built for each run after that sees the tools the
// session holds then and calls them; a tool of an earlier run that left
// the session answers as an unknown tool.
func TestLateServerAndListChanges(t *testing.T) {
	ctx := context.Background()
	srv := echoServer()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	warmCache(t, st, map[string]fixture{"late": {srv: srv}})

	release := make(chan struct{})
	s, closeSession := startSessionOn(t, st, map[string]fixture{"late": {srv: srv, release: release}},
		&session.Options{Manager: &manager.Options{Gate: 10 * time.Millisecond}})
	t.Cleanup(closeSession)

	// Start returned at the gate with the server still connecting, and its
	// cached tools are the session's.
	echo, ok := s.Tool("mcp_late_echo")
	if !ok || echo.MCP == nil || !echo.MCP.Deferred {
		t.Fatalf("at the gate: tools %v, echo %+v", toolNames(s), echo.MCP)
	}
	if status := s.Manager().Status("late"); status == projector.StatusConnected {
		t.Fatalf("the server connected before its release")
	}
	// The agent calls the deferred tool; the server connects once the
	// call has started.
	starting := &onStart{f: func() { close(release) }}
	out, m, err := runReAct(ctx, s, &mcplangchaingo.Options{Callbacks: starting}, "mcp_late_echo", `{"text":"late"}`)
	if err != nil {
		t.Fatal(err)
	}
	if out != "late" {
		t.Fatalf("echo through the agent: got %q, want %q", out, "late")
	}
	if !strings.Contains(m.prompts[0], "- mcp_late_echo: Echoes its text.") {
		t.Fatalf("the agent's prompt does not list the tool:\n%s", m.prompts[0])
	}
	before := mcplangchaingo.Tools(s, nil)

	type args struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Adds two numbers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("|", in.A+in.B)), nil, nil
		})
	waitTools(t, s, func(names []string) bool { return slices.Contains(names, "mcp_late_add") })
	out, m, err = runReAct(ctx, s, nil, "mcp_late_add", `{"a":2,"b":3}`)
	if err != nil {
		t.Fatal(err)
	}
	if out != "|||||" {
		t.Fatalf("the added tool through the agent: got %q, want %q", out, "|||||")
	}
	if !strings.Contains(m.prompts[0], "- mcp_late_add: Adds two numbers.") {
		t.Fatalf("the agent's prompt does not list the added tool:\n%s", m.prompts[0])
	}

	srv.RemoveTools("echo")
	waitTools(t, s, func(names []string) bool { return !slices.Contains(names, "mcp_late_echo") })
	if got := names(mcplangchaingo.Tools(s, nil)); !slices.Equal(got, []string{"mcp_late_add"}) {
		t.Fatalf("tools after the removal: %v", got)
	}
	// The tool value of the earlier slice is still in the caller's hands.
	got, err := before[0].Call(ctx, `{"text":"gone"}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := manager.ErrorPrefix + "no such MCP tool: mcp_late_echo"; got != want {
		t.Fatalf("a removed tool: got %q, want %q", got, want)
	}
}

// onStart is a callbacks.Handler that calls f at the first tool start.
type onStart struct {
	callbacks.SimpleHandler
	once sync.Once
	f    func()
}

func (o *onStart) HandleToolStart(context.Context, string) { o.once.Do(o.f) }

func names(ts []tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

// A session with session.ToolsCallTool offers two tools that never change:
// an agent built once reaches a tool the server added after it was built.
func TestCallToolModeFollowsWithoutRebuilding(t *testing.T) {
	ctx := context.Background()
	srv := echoServer()
	s := startSession(t, map[string]fixture{"demo": {srv: srv}}, &session.Options{ToolMode: session.ToolsCallTool})
	ready(t, s)

	m := &reactModel{tool: session.CallToolName, input: `{"name":"mcp_demo_shout","arguments":{"text":"hi"}}`}
	executor := agents.NewExecutor(agents.NewOneShotAgent(m, mcplangchaingo.Tools(s, nil)), agents.WithMaxIterations(3))
	out, err := chains.Run(ctx, executor, "Shout hi.")
	if err != nil {
		t.Fatal(err)
	}
	if want := `Error: mcp__call_tool: no MCP tool "mcp_demo_shout"`; !strings.HasPrefix(out, want) {
		t.Fatalf("before the tool was added: got %q, want it to start %q", out, want)
	}

	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "shout"},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return text(strings.ToUpper(in.Text)), nil, nil
		})
	waitTools(t, s, func([]string) bool { _, ok := s.Tool("mcp_demo_shout"); return ok })
	out, err = chains.Run(ctx, executor, "Shout hi.")
	if err != nil {
		t.Fatal(err)
	}
	if out != "HI" {
		t.Fatalf("the same executor after the tool was added: got %q, want %q", out, "HI")
	}
}

// Cancelling the run's context cancels the MCP call: the server's handler
// sees its context end, and the run ends with the context's error.
func TestCancelCancelsTheCall(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1.0.0"}, nil)
	started := make(chan struct{})
	cancelled := make(chan struct{})
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	s := startSession(t, map[string]fixture{"slow": {srv: srv}}, nil)
	ready(t, s)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := runReAct(ctx, s, nil, "mcp_slow_wait", "None")
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the run ended with %v, want context.Canceled", err)
	}
	<-cancelled
}

// isErrorServer has one tool, divide, whose failure is an isError result.
func isErrorServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	type args struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "divide"},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			if in.B == 0 {
				r := text("division by zero")
				r.IsError = true
				return r, nil, nil
			}
			return text("ok"), nil, nil
		})
	return srv
}

// An isError result is an observation the agent reads, as langchaingo's
// own tools answer a failure; with ReturnErrors it is a *ToolError that
// ends the run.
func TestIsErrorResult(t *testing.T) {
	ctx := context.Background()
	s := startSession(t, map[string]fixture{"calc": {srv: isErrorServer()}}, nil)
	ready(t, s)

	out, m, err := runReAct(ctx, s, nil, "mcp_calc_divide", `{"a":1,"b":0}`)
	if err != nil {
		t.Fatal(err)
	}
	if out != "Error: division by zero" {
		t.Fatalf("got %q, want the error as the observation", out)
	}
	if len(m.prompts) != 2 || !strings.Contains(m.prompts[1], "\nObservation: Error: division by zero\n") {
		t.Fatalf("the model did not see the error: %q", m.prompts)
	}

	_, _, err = runReAct(ctx, s, &mcplangchaingo.Options{ReturnErrors: true}, "mcp_calc_divide", `{"a":1,"b":0}`)
	var te *mcplangchaingo.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("with ReturnErrors the run ended with %v, want a *ToolError", err)
	}
	if te.Tool != "mcp_calc_divide" || te.Err != nil || !te.Result.IsError || te.Error() != "mcp_calc_divide: division by zero" {
		t.Fatalf("ToolError %+v: %q", te, te.Error())
	}

	// A failure on the client side is one too, with its cause.
	tool := mcplangchaingo.Tools(s, &mcplangchaingo.Options{ReturnErrors: true})[0]
	_, err = tool.Call(ctx, "not arguments")
	if !errors.As(err, &te) || te.Err == nil || !strings.Contains(te.Error(), "must be a JSON object") {
		t.Fatalf("an input that is not arguments: %v", err)
	}
	if err := s.Manager().DisconnectServer(ctx, "calc"); err != nil {
		t.Fatal(err)
	}
	_, err = tool.Call(ctx, `{"a":1,"b":2}`)
	// The session's registry follows the disconnect a moment later: until
	// then the tool is there and its server is not.
	if !errors.Is(err, session.ErrUnknownTool) && !errors.Is(err, manager.ErrNotConnected) {
		t.Fatalf("a tool of a disconnected server: %v", err)
	}
}

// Every kind of content reaches the agent as text: items in order, the
// binary ones named with their type and size, structured content as JSON.
func TestContentKinds(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "media", Version: "1.0.0"}, nil)
	size := int64(2048)
	srv.AddTool(&mcp.Tool{Name: "all", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content: []mcp.Content{
					&mcp.TextContent{Text: "two files"},
					&mcp.ImageContent{Data: []byte("\x89PNG...."), MIMEType: "image/png"},
					&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
					&mcp.ResourceLink{URI: "file:///r/report.pdf", Name: "report.pdf", Title: "Report", MIMEType: "application/pdf", Size: &size, Description: "the quarterly report"},
					&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r/notes.md", MIMEType: "text/markdown", Text: "# Notes\nship it"}},
					&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r/logo.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
				},
				StructuredContent: map[string]any{"files": 2, "ok": true},
			}, nil
		})
	type out struct {
		Sum int `json:"sum"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "typed"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, out, error) {
			return nil, out{Sum: 5}, nil // text and structured content holding the same JSON
		})
	s := startSession(t, map[string]fixture{"media": {srv: srv}}, nil)
	ready(t, s)
	ctx := context.Background()

	got, _, err := runReAct(ctx, s, nil, "mcp_media_all", "{}")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"two files",
		"[image: image/png, 8 bytes]",
		"[audio: audio/wav, 4 bytes]",
		"[resource link: file:///r/report.pdf, name report.pdf, title Report, application/pdf, 2048 bytes, description the quarterly report]",
		"[embedded resource: file:///r/notes.md, text/markdown]",
		"# Notes",
		"ship it",
		"[embedded resource: file:///r/logo.bin, application/octet-stream, 3 bytes]",
		`{"files":2,"ok":true}`,
	}, "\n")
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	got, _, err = runReAct(ctx, s, nil, "mcp_media_typed", "{}")
	if err != nil {
		t.Fatal(err)
	}
	if got != `{"sum":5}` {
		t.Fatalf("structured content that a text item holds already: got %q", got)
	}

	// Render gets the whole result.
	var kinds []string
	render := func(r *mcp.CallToolResult) string {
		for _, c := range r.Content {
			switch c.(type) {
			case *mcp.ImageContent:
				kinds = append(kinds, "image")
			case *mcp.AudioContent:
				kinds = append(kinds, "audio")
			}
		}
		return "rendered"
	}
	tool := mcplangchaingo.Tools(s, &mcplangchaingo.Options{Render: render})[0]
	if got, err := tool.Call(ctx, ""); err != nil || got != "rendered" || !slices.Equal(kinds, []string{"image", "audio"}) {
		t.Fatalf("Render: %q, %v, saw %v", got, err, kinds)
	}
}

// The input is read as the package doc says: a JSON object as it is, the
// value of a tool's one string parameter as plain text or as a JSON
// string, and a JSON value for one parameter of another type.
func TestInputForms(t *testing.T) {
	srv := echoServer()
	type num struct {
		N int `json:"n"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "double"},
		func(ctx context.Context, req *mcp.CallToolRequest, in num) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", 2*in.N)), nil, nil
		})
	s := startSession(t, map[string]fixture{"demo": {srv: srv}}, nil)
	ready(t, s)
	ctx := context.Background()
	byName := map[string]tools.Tool{}
	for _, tl := range mcplangchaingo.Tools(s, nil) {
		byName[tl.Name()] = tl
	}
	for _, tc := range []struct{ tool, input, want string }{
		{"mcp_demo_echo", `{"text":"object"}`, "object"},
		{"mcp_demo_echo", "```json\n{\"text\":\"fenced\"}\n```", "fenced"},
		{"mcp_demo_echo", "plain words", "plain words"},
		{"mcp_demo_echo", `"quoted \"words\""`, `quoted "words"`},
		{"mcp_demo_echo", "  [1, 2]  ", "[1, 2]"},
		{"mcp_demo_double", "3", "xxxxxx"},
		{"mcp_demo_double", `{"n":1}`, "xx"},
		{"mcp_demo_double", "three", manager.ErrorPrefix + "mcp_demo_double: the input must be a JSON object with the tool's arguments"},
	} {
		got, err := byName[tc.tool].Call(ctx, tc.input)
		if err != nil {
			t.Fatalf("%s(%q): %v", tc.tool, tc.input, err)
		}
		if got != tc.want {
			t.Errorf("%s(%q) = %q, want %q", tc.tool, tc.input, got, tc.want)
		}
	}
}

// recorder is a callbacks.Handler that keeps the tool callbacks.
type recorder struct {
	callbacks.SimpleHandler
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }

func (r *recorder) HandleToolStart(_ context.Context, input string) { r.add("start " + input) }
func (r *recorder) HandleToolEnd(_ context.Context, output string)  { r.add("end " + output) }
func (r *recorder) HandleToolError(_ context.Context, err error)    { r.add("error " + err.Error()) }

// Options.Callbacks is told of each call as langchaingo's own tools tell
// theirs.
func TestCallbacks(t *testing.T) {
	s := startSession(t, map[string]fixture{"calc": {srv: isErrorServer()}}, nil)
	ready(t, s)
	ctx := context.Background()
	rec := &recorder{}
	tool := mcplangchaingo.Tools(s, &mcplangchaingo.Options{Callbacks: rec})[0]
	if _, err := tool.Call(ctx, `{"a":1,"b":2}`); err != nil {
		t.Fatal(err)
	}
	strict := mcplangchaingo.Tools(s, &mcplangchaingo.Options{Callbacks: rec, ReturnErrors: true})[0]
	if _, err := strict.Call(ctx, `{"a":1,"b":0}`); err == nil {
		t.Fatal("no error with ReturnErrors")
	}
	want := []string{
		`start {"a":1,"b":2}`, "end ok",
		`start {"a":1,"b":0}`, "error mcp_calc_divide: division by zero",
	}
	if !slices.Equal(rec.events, want) {
		t.Fatalf("callbacks %q, want %q", rec.events, want)
	}
}
