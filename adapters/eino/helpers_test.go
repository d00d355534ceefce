package mcpeino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// scriptedModel is a chat model that decides like an agent's model would,
// without a network: on a turn whose last message is not a tool result it
// calls the tool pick chooses among the tools it was given (bound, or
// given for the run), and after a tool result it answers with what the
// tool said. It records the tool names it saw at each turn.
type scriptedModel struct {
	pick  func(tools []*schema.ToolInfo) (name, args string, ok bool)
	bound []*schema.ToolInfo

	mu   *sync.Mutex
	seen *[][]string
}

func newScriptedModel(pick func(tools []*schema.ToolInfo) (string, string, bool)) *scriptedModel {
	return &scriptedModel{pick: pick, mu: &sync.Mutex{}, seen: &[][]string{}}
}

// callNamed picks the tool whose name is name.
func callNamed(name, args string) func([]*schema.ToolInfo) (string, string, bool) {
	return func(tools []*schema.ToolInfo) (string, string, bool) {
		for _, t := range tools {
			if t.Name == name {
				return name, args, true
			}
		}
		return "", "", false
	}
}

func (m *scriptedModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	c := *m
	c.bound = tools
	return &c, nil
}

func (m *scriptedModel) Generate(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	tools := model.GetCommonOptions(&model.Options{Tools: m.bound}, opts...).Tools
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	m.mu.Lock()
	*m.seen = append(*m.seen, names)
	m.mu.Unlock()

	last := input[len(input)-1]
	if last.Role == schema.Tool {
		return schema.AssistantMessage("the tool said: "+toolMessageText(last), nil), nil
	}
	name, args, ok := m.pick(tools)
	if !ok {
		return schema.AssistantMessage("no tool to call among "+strings.Join(names, ","), nil), nil
	}
	return schema.AssistantMessage("", []schema.ToolCall{{ID: "call-1", Function: schema.FunctionCall{Name: name, Arguments: args}}}), nil
}

func (m *scriptedModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

// seenTools returns the tool names the model saw at each turn so far.
func (m *scriptedModel) seenTools() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(*m.seen)
}

// toolMessageText is what a tool message carries: its text, or its parts
// one by one (text as it is, other parts by type and MIME type).
func toolMessageText(msg *schema.Message) string {
	if len(msg.UserInputMultiContent) == 0 {
		return msg.Content
	}
	var parts []string
	for _, p := range msg.UserInputMultiContent {
		switch {
		case p.Type == schema.ChatMessagePartTypeText:
			parts = append(parts, p.Text)
		case p.Image != nil:
			parts = append(parts, fmt.Sprintf("<%s %s %s>", p.Type, p.Image.MIMEType, *p.Image.Base64Data))
		case p.Audio != nil:
			parts = append(parts, fmt.Sprintf("<%s %s %s>", p.Type, p.Audio.MIMEType, *p.Audio.Base64Data))
		case p.File != nil:
			parts = append(parts, fmt.Sprintf("<%s %s %s>", p.Type, p.File.MIMEType, *p.File.Base64Data))
		}
	}
	return strings.Join(parts, " | ")
}

// fixture is one in-process go-sdk server, "demo", reached by a session
// through the manager's Dial. A late fixture connects after the session's
// startup gate: its server is connected once the session started, and its
// Dial waits for release.
type fixture struct {
	server  *mcp.Server
	late    bool
	release chan struct{}
	// toolTimeoutMs is the server config's tool-call timeout (nil: default).
	toolTimeoutMs *int64
}

func newFixture(late bool) *fixture {
	f := &fixture{server: mcp.NewServer(&mcp.Implementation{Name: "demo", Version: "1.0.0"}, nil), late: late, release: make(chan struct{})}
	if !late {
		close(f.release)
	}
	return f
}

// addTextTool adds a tool that answers with text made by answer.
func (f *fixture) addTextTool(name string, answer func(args map[string]any) string) {
	f.server.AddTool(&mcp.Tool{Name: name, Description: "The " + name + " tool.", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}},
	}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if len(req.Params.Arguments) > 0 {
			_ = json.Unmarshal(req.Params.Arguments, &args)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer(args)}}}, nil
	})
}

// addResultTool adds a tool that answers with res.
func (f *fixture) addResultTool(name string, res *mcp.CallToolResult) {
	f.server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
}

// start starts a session whose one server is the fixture; a late
// fixture's connect starts after Start returned, and waits for release.
func (f *fixture) start(t testing.TB) *session.Session {
	t.Helper()
	ctx := context.Background()
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	demo := events.ServerConfig{Name: "demo", Command: "in-process", ToolTimeoutMs: f.toolTimeoutMs}
	servers := []events.ServerConfig{demo}
	if f.late {
		servers = []events.ServerConfig{}
	}
	s, err := session.Start(ctx, j, &session.Options{
		Servers: servers,
		Manager: &manager.Options{
			RelistInterval: time.Millisecond,
			Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
				select {
				case <-f.release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				serverSide, clientSide := mcp.NewInMemoryTransports()
				if _, err := f.server.Connect(ctx, serverSide, nil); err != nil {
					return nil, err
				}
				return clientSide, nil
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	connected := make(chan error, 1)
	if f.late {
		go func() {
			_, err := s.Manager().ConnectServers(ctx, []events.ServerConfig{demo}, nil)
			connected <- err
		}()
	} else {
		connected <- nil
	}
	t.Cleanup(func() {
		close2(f.release)
		if err := <-connected; err != nil {
			t.Errorf("connecting demo: %v", err)
		}
		_ = s.Close(ctx)
		_ = j.Close()
		_ = st.Close()
	})
	return s
}

func close2(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// waitFor waits, through the session's change signal, until cond holds.
func waitFor(t testing.TB, s *session.Session, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-s.Changes():
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; tools: %v", what, toolNames(s))
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

func hasTool(s *session.Session, name string) func() bool {
	return func() bool { _, ok := s.Tool(name); return ok }
}

func jsonNumber(s string) json.Number { return json.Number(s) }

// named returns the tool of tools named name.
func named(t testing.TB, tools []tool.BaseTool, name string) tool.BaseTool {
	t.Helper()
	for _, bt := range tools {
		info, err := bt.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.Name == name {
			return bt
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}
