package mcplangchaingo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/llms"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// fixture is one in-process go-sdk server of a test session.
type fixture struct {
	srv *mcp.Server
	// release, when set, holds the server's connect until it is closed:
	// a server that connects after the session's startup gate.
	release chan struct{}
}

// startSession starts a session, recorded in a new in-memory store, whose
// servers are the fixtures, by name, reached over in-memory transports.
// opts may set the session's other options; its Servers and Manager.Dial
// are the fixtures'. The session is closed when the test ends.
func startSession(t testing.TB, fixtures map[string]fixture, opts *session.Options) *session.Session {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	s, closeSession := startSessionOn(t, st, fixtures, opts)
	t.Cleanup(closeSession)
	return s
}

// warmCache runs a session on st whose servers are the fixtures until
// each has listed its tools, so that the tool cache of the next session on
// st holds their lists.
func warmCache(t testing.TB, st *memory.Store, fixtures map[string]fixture) {
	t.Helper()
	s, closeSession := startSessionOn(t, st, fixtures, nil)
	ready(t, s)
	closeSession()
}

// startSessionOn is startSession on st; closeSession closes the session
// and its journal.
func startSessionOn(t testing.TB, st *memory.Store, fixtures map[string]fixture, opts *session.Options) (_ *session.Session, closeSession func()) {
	t.Helper()
	ctx := context.Background()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	var o session.Options
	if opts != nil {
		o = *opts
	}
	var mo manager.Options
	if o.Manager != nil {
		mo = *o.Manager
	}
	if mo.RelistInterval == 0 {
		mo.RelistInterval = time.Millisecond // list_changed is re-listed at once
	}
	mo.Dial = func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
		f := fixtures[cfg.Name]
		if f.release != nil {
			select {
			case <-f.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		serverSide, clientSide := mcp.NewInMemoryTransports()
		if _, err := f.srv.Connect(ctx, serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}
	o.Manager = &mo
	o.Servers = []events.ServerConfig{}
	for _, name := range slices.Sorted(maps.Keys(fixtures)) {
		o.Servers = append(o.Servers, events.ServerConfig{Name: name, Command: "in-process"})
	}
	s, err := session.Start(ctx, j, &o)
	if err != nil {
		t.Fatal(err)
	}
	return s, func() {
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := j.Close(); err != nil {
			t.Error(err)
		}
	}
}

// ready waits for every server of s to settle.
func ready(t testing.TB, s *session.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitTools waits, following s.Changes, until cond holds of the names of
// s's tools.
func waitTools(t *testing.T, s *session.Session, cond func(names []string) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if cond(toolNames(s)) {
			return
		}
		select {
		case <-s.Changes():
		case <-ctx.Done():
			t.Fatalf("tools are %v: the awaited change did not come", toolNames(s))
		}
	}
}

func toolNames(s *session.Session) []string {
	var names []string
	for _, t := range s.Tools() {
		names = append(names, t.Name)
	}
	return names
}

// text is a result of one text item.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// echoServer is a server with one tool, echo, that answers its text
// argument.
func echoServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "demo", Version: "1.0.0"}, nil)
	type args struct {
		Text string `json:"text" jsonschema:"what to echo"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	return srv
}

// reactModel is a fake chat model that answers in the ReAct format that
// langchaingo's MRKL agent parses: first it calls tool with input, then,
// once the prompt holds the tool's observation, it gives the observation
// as its final answer. It keeps the prompts it was given.
type reactModel struct {
	tool, input string

	mu      sync.Mutex
	prompts []string
}

var _ llms.Model = (*reactModel)(nil)

func (m *reactModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var prompt strings.Builder
	for _, msg := range msgs {
		for _, p := range msg.Parts {
			if t, ok := p.(llms.TextContent); ok {
				prompt.WriteString(t.Text)
			}
		}
	}
	m.mu.Lock()
	m.prompts = append(m.prompts, prompt.String())
	m.mu.Unlock()
	// The scratchpad follows "Begin!"; the format instructions before it
	// name an Observation too.
	work := prompt.String()
	work = work[strings.LastIndex(work, "Begin!"):]
	out := "Thought: I should use a tool.\nAction: " + m.tool + "\nAction Input: " + m.input
	if i := strings.LastIndex(work, "\nObservation: "); i >= 0 {
		out = "Thought: I now know the final answer.\nFinal Answer: " + strings.TrimSpace(work[i+len("\nObservation: "):])
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: out}}}, nil
}

func (m *reactModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// toolCallModel is a fake chat model with native function calling: while
// the last message is not a tool's response it calls tool with args
// (once per GenerateContent), then it answers with the responses' content.
// It keeps the options of every call.
type toolCallModel struct {
	tool, args string

	mu    sync.Mutex
	calls []llms.CallOptions
}

var _ llms.Model = (*toolCallModel)(nil)

func (m *toolCallModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	m.mu.Lock()
	n := len(m.calls)
	m.calls = append(m.calls, o)
	m.mu.Unlock()
	last := msgs[len(msgs)-1]
	if last.Role != llms.ChatMessageTypeTool {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
			ToolCalls: []llms.ToolCall{{ID: fmt.Sprintf("call-%d", n), Type: "function",
				FunctionCall: &llms.FunctionCall{Name: m.tool, Arguments: m.args}}},
		}}}, nil
	}
	var answers []string
	for _, p := range last.Parts {
		if r, ok := p.(llms.ToolCallResponse); ok {
			answers = append(answers, r.Content)
		}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: strings.Join(answers, "\n")}}}, nil
}

func (m *toolCallModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// jsonEqual says whether a and b are the same JSON value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}
