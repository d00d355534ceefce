package mcpeino_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpeino "github.com/mcplife/mcplife/adapters/eino"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
)

// run runs one react-agent turn with the session's tools as they are now.
func run(t *testing.T, ctx context.Context, s *session.Session, m *scriptedModel, opts *mcpeino.Options) (*schema.Message, error) {
	t.Helper()
	return runWith(t, ctx, mcpeino.Tools(s, opts), m)
}

// runWith runs one react-agent turn with tools.
func runWith(t *testing.T, ctx context.Context, tools []tool.BaseTool, m *scriptedModel) (*schema.Message, error) {
	t.Helper()
	agent, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: m, MaxStep: 6})
	if err != nil {
		t.Fatal(err)
	}
	runOpts, err := react.WithTools(ctx, tools...)
	if err != nil {
		t.Fatal(err)
	}
	return agent.Generate(ctx, []*schema.Message{schema.UserMessage("go")}, runOpts...)
}

// mustAnswer runs one turn and returns the agent's answer.
func mustAnswer(t *testing.T, ctx context.Context, s *session.Session, m *scriptedModel, opts *mcpeino.Options) string {
	t.Helper()
	msg, err := run(t, ctx, s, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return msg.Content
}

// A server that connects after the startup gate, then adds a tool and
// removes one: each run of the react agent sees the session's tools as
// they are at its start, calls the new ones, and a tool value kept from
// before the removal fails as an unknown tool instead of calling anything.
func TestLateServerAndListChanges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(true)
	f.addTextTool("first", func(args map[string]any) string { return "first got " + args["text"].(string) })
	s := f.start(t)

	// The session started; the server's connect waits in its Dial.
	m := newScriptedModel(callNamed("mcp_demo_first", `{"text":"one"}`))
	if got := mustAnswer(t, ctx, s, m, nil); got != "no tool to call among " {
		t.Fatalf("before the server connected: %q", got)
	}

	close(f.release)
	waitFor(t, s, "mcp_demo_first", hasTool(s, "mcp_demo_first"))
	if got := mustAnswer(t, ctx, s, m, nil); got != "the tool said: first got one" {
		t.Fatalf("after the late connect: %q", got)
	}
	kept := mcpeino.Tools(s, nil)

	// The server adds a tool: list_changed, re-list, new tool.
	f.addTextTool("second", func(args map[string]any) string { return "second got " + args["text"].(string) })
	waitFor(t, s, "mcp_demo_second", hasTool(s, "mcp_demo_second"))
	m2 := newScriptedModel(callNamed("mcp_demo_second", `{"text":"two"}`))
	if got := mustAnswer(t, ctx, s, m2, nil); got != "the tool said: second got two" {
		t.Fatalf("after the list grew: %q", got)
	}
	if seen := m2.seenTools()[0]; !slices.Equal(seen, []string{"mcp_demo_first", "mcp_demo_second"}) {
		t.Fatalf("the model saw %v", seen)
	}

	// The server removes the first tool.
	f.server.RemoveTools("first")
	waitFor(t, s, "mcp_demo_first to go", func() bool { return !hasTool(s, "mcp_demo_first")() })
	m3 := newScriptedModel(callNamed("mcp_demo_first", `{"text":"three"}`))
	if got := mustAnswer(t, ctx, s, m3, nil); got != "no tool to call among mcp_demo_second" {
		t.Fatalf("after the removal: %q", got)
	}
	first := kept[0].(tool.InvokableTool)
	_, err := first.InvokableRun(ctx, `{"text":"stale"}`)
	var te *mcpeino.ToolError
	if !errors.As(err, &te) || !errors.Is(err, session.ErrUnknownTool) {
		t.Fatalf("a removed tool's old value: %v", err)
	}
}

// A tool that arrived after a run started is not in that run's list; the
// ToolsNode's UnknownToolsHandler calls it by name within the same run.
func TestUnknownToolsHandlerReachesNewTools(t *testing.T) {
	ctx := context.Background()
	f := newFixture(false)
	f.addTextTool("first", func(map[string]any) string { return "first" })
	s := f.start(t)
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	tools := mcpeino.Tools(s, nil) // the run's list, taken before the change
	f.addTextTool("late", func(args map[string]any) string { return "late got " + args["text"].(string) })
	waitFor(t, s, "mcp_demo_late", hasTool(s, "mcp_demo_late"))

	// The model calls a tool its run's list does not hold.
	m := newScriptedModel(func([]*schema.ToolInfo) (string, string, bool) { return "mcp_demo_late", `{"text":"x"}`, true })
	agent, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: m, MaxStep: 6,
		ToolsConfig: compose.ToolsNodeConfig{Tools: tools, UnknownToolsHandler: mcpeino.UnknownToolsHandler(s, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("go")})
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Content; got != "the tool said: late got x" {
		t.Fatalf("got %q", got)
	}

	// A name the session does not hold either is an unknown-tool error,
	// or its text with ErrorsAsResults.
	h := mcpeino.UnknownToolsHandler(s, nil)
	if _, err := h(ctx, "mcp_demo_nope", "{}"); !errors.Is(err, session.ErrUnknownTool) {
		t.Fatalf("unknown name: %v", err)
	}
	text, err := mcpeino.UnknownToolsHandler(s, &mcpeino.Options{ErrorsAsResults: true})(ctx, "mcp_demo_nope", "{}")
	if err != nil || text != "MCP error: no such MCP tool: mcp_demo_nope" {
		t.Fatalf("unknown name as a result: %q, %v", text, err)
	}
}

// Cancelling the run's context cancels the MCP call on the server, and the
// run ends with the context's error.
func TestCancellationReachesTheServer(t *testing.T) {
	f := newFixture(false)
	started, cancelled := make(chan struct{}), make(chan struct{})
	f.server.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	s := f.start(t)
	if err := s.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newScriptedModel(callNamed("mcp_demo_block", `{}`))
	done := make(chan error, 1)
	go func() {
		_, err := run(t, ctx, s, m, nil)
		done <- err
	}()
	<-started
	cancel()
	<-cancelled
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("run ended with %v, want context.Canceled", err)
	}
}

// An isError result ends the run with a *ToolError by default, as any eino
// tool error does; with ErrorsAsResults the model reads its text and the
// run goes on.
func TestIsErrorResult(t *testing.T) {
	ctx := context.Background()
	f := newFixture(false)
	f.addResultTool("fail", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}})
	s := f.start(t)
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	m := newScriptedModel(callNamed("mcp_demo_fail", `{}`))

	_, err := run(t, ctx, s, m, nil)
	var te *mcpeino.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("run ended with %v, want a *ToolError", err)
	}
	if te.Tool != "mcp_demo_fail" || !te.Result.IsError || te.Err != nil || te.Error() != "mcp_demo_fail: disk full" {
		t.Fatalf("ToolError %+v: %v", te, te)
	}

	for _, multimodal := range []bool{false, true} {
		got := mustAnswer(t, ctx, s, m, &mcpeino.Options{ErrorsAsResults: true, Multimodal: multimodal})
		if got != "the tool said: disk full" {
			t.Fatalf("multimodal %v: %q", multimodal, got)
		}
	}
}

// A call that fails on the client side (here the server config's tool
// timeout) is an isError result made by the manager: its ToolError wraps
// the manager's error.
func TestClientSideFailure(t *testing.T) {
	ctx := context.Background()
	f := newFixture(false)
	timeout := int64(1)
	f.toolTimeoutMs = &timeout
	f.server.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s := f.start(t)
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	tools := mcpeino.Tools(s, nil)
	_, err := tools[0].(tool.InvokableTool).InvokableRun(ctx, `{}`)
	var te *mcpeino.ToolError
	if !errors.As(err, &te) || !errors.Is(err, manager.ErrTimeout) || !te.Result.IsError {
		t.Fatalf("a call that timed out: %v", err)
	}
	text, err := mcpeino.Tools(s, &mcpeino.Options{ErrorsAsResults: true})[0].(tool.InvokableTool).InvokableRun(ctx, `{}`)
	if err != nil || !strings.HasPrefix(text, manager.ErrorPrefix) {
		t.Fatalf("as a result: %q, %v", text, err)
	}
}

// A Toolset reuses the info of a tool whose definition did not change, and
// builds a new one for a tool the server redefined; runs see the change.
func TestToolsetFollowsRedefinitions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(false)
	f.addTextTool("a", func(map[string]any) string { return "a1" })
	f.addTextTool("b", func(map[string]any) string { return "b" })
	s := f.start(t)
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	ts := mcpeino.NewToolset(s, nil)
	info := func(tools []tool.BaseTool, name string) *schema.ToolInfo {
		t.Helper()
		i, err := named(t, tools, name).Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	first := ts.Tools()
	a1, b1 := info(first, "mcp_demo_a"), info(first, "mcp_demo_b")
	if again := ts.Tools(); info(again, "mcp_demo_a") != a1 || info(again, "mcp_demo_b") != b1 {
		t.Fatal("an unchanged tool's info was built again")
	}

	// The server replaces a with a tool of another description. The
	// session's change signal tells of names that come and go, so the
	// test follows the manager's updates instead.
	updates, err := s.Manager().Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.server.AddTool(&mcp.Tool{Name: "a", Description: "A, second edition.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a2"}}}, nil
		})
	for st, _ := s.Tool("mcp_demo_a"); st.Description != "A, second edition."; st, _ = s.Tool("mcp_demo_a") {
		if _, ok := <-updates; !ok {
			t.Fatal("the manager closed")
		}
		s.RefreshMCPTools()
	}
	later := ts.Tools()
	if a2 := info(later, "mcp_demo_a"); a2 == a1 || a2.Desc != "A, second edition." {
		t.Fatalf("a after its redefinition: %+v", a2)
	}
	if info(later, "mcp_demo_b") != b1 {
		t.Fatal("b's info was built again")
	}
	m := newScriptedModel(callNamed("mcp_demo_a", `{}`))
	msg, err := runWith(t, ctx, later, m)
	if err != nil || msg.Content != "the tool said: a2" {
		t.Fatalf("run after the redefinition: %v, %v", msg, err)
	}
}
