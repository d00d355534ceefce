package mcpgenkit_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

func TestMain(m *testing.M) {
	// Genkit starts its reflection server under GENKIT_ENV=dev and exports
	// traces to GENKIT_TELEMETRY_SERVER: the tests want neither.
	os.Unsetenv("GENKIT_ENV")
	os.Unsetenv("GENKIT_TELEMETRY_SERVER")
	os.Exit(m.Run())
}

// fixture is a session over go-sdk servers in this process, each reached
// through the manager's Dial over in-memory transports.
type fixture struct {
	servers map[string]*mcp.Server
	// held names servers whose Dial blocks until the channel is closed.
	held map[string]chan struct{}
	// cached seeds the tool cache with a list per server, as an earlier
	// session would have left it, so a held server's tools are served
	// deferred at the gate instead of being awaited.
	cached map[string][]string
	// own are the agent's own tools.
	own []session.Tool
}

func (f fixture) start(t testing.TB) *session.Session {
	t.Helper()
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close(); st.Close() })
	var configs []events.ServerConfig
	for name := range f.servers {
		configs = append(configs, events.ServerConfig{Name: name, Command: "in-process"})
	}
	slices.SortFunc(configs, func(a, b events.ServerConfig) int { return strings.Compare(a.Name, b.Name) })
	for _, cfg := range configs {
		tools := f.cached[cfg.Name]
		if len(tools) == 0 {
			continue
		}
		var defs []events.ToolDef
		for _, name := range tools {
			defs = append(defs, events.ToolDef{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)})
		}
		if _, err := j.Append(t.Context(), "earlier", &events.ToolsListed{Server: cfg.Name, ConfigHash: cfg.Hash(), Tools: defs, Count: len(defs), Cause: events.CauseInitial}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := session.Start(t.Context(), j, &session.Options{
		Servers: configs,
		Tools:   f.own,
		Loader:  loader.Options{Cwd: t.TempDir()},
		Manager: &manager.Options{
			Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
				if hold, ok := f.held[cfg.Name]; ok {
					select {
					case <-hold:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				serverSide, clientSide := mcp.NewInMemoryTransports()
				if _, err := f.servers[cfg.Name].Connect(ctx, serverSide, nil); err != nil {
					return nil, err
				}
				return clientSide, nil
			},
			OutputDir: t.TempDir(),
			// A list_changed is re-listed at once rather than up to a
			// second later.
			RelistInterval: time.Millisecond,
		},
		KeepAbandoned: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// waitFor blocks on the session's change notifications until cond holds.
func waitFor(t *testing.T, s *session.Session, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-s.Changes():
		case <-t.Context().Done():
			t.Fatalf("%s never held; tools: %v", what, toolNames(s.Tools()))
		}
	}
}

func toolNames(ts []session.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func offered(s *session.Session, name string) bool {
	_, ok := s.Tool(name)
	return ok
}

// call is what the scripted model is asked to do: call Tool with Input.
type call struct {
	Tool  string `json:"tool"`
	Input any    `json:"input,omitempty"`
	// NoInput sends no input at all (nil) rather than an empty object.
	NoInput bool `json:"noInput,omitempty"`
}

// turn is what the scripted model saw on one of its turns.
type turn struct {
	Tools []string // the names of the tools offered
	Defs  map[string]*ai.ToolDefinition
	// Responses are the tool responses of the turn's last message.
	Responses []*ai.ToolResponse
}

// scripted is a fake model: the prompt is a JSON [call]; on its first turn
// the model asks for that tool when it is offered (and says so when it is
// not), and once the tool answered it replies with the response's Output
// as JSON. It keeps what it saw on every turn.
type scripted struct {
	model ai.Model
	mu    sync.Mutex
	turns []turn
}

func newScripted(t testing.TB) (*genkit.Genkit, *scripted) {
	g := genkit.Init(t.Context())
	sm := &scripted{}
	sm.model = genkit.DefineModel(g, "test/scripted",
		&ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		sm.generate)
	return g, sm
}

func (sm *scripted) generate(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	tr := turn{Defs: map[string]*ai.ToolDefinition{}}
	for _, d := range req.Tools {
		tr.Tools = append(tr.Tools, d.Name)
		tr.Defs[d.Name] = d
	}
	last := req.Messages[len(req.Messages)-1]
	for _, p := range last.Content {
		if p.IsToolResponse() {
			// A copy: Genkit reuses the request across turns.
			b, _ := json.Marshal(p.ToolResponse)
			var r ai.ToolResponse
			json.Unmarshal(b, &r)
			tr.Responses = append(tr.Responses, &r)
		}
	}
	sm.mu.Lock()
	sm.turns = append(sm.turns, tr)
	sm.mu.Unlock()

	if len(tr.Responses) > 0 {
		b, err := json.Marshal(tr.Responses[0].Output)
		if err != nil {
			return nil, err
		}
		return &ai.ModelResponse{Message: ai.NewModelTextMessage(string(b))}, nil
	}
	var c call
	if err := json.Unmarshal([]byte(last.Text()), &c); err != nil {
		return nil, err
	}
	if !slices.Contains(tr.Tools, c.Tool) {
		return &ai.ModelResponse{Message: ai.NewModelTextMessage("not offered: " + c.Tool)}, nil
	}
	if c.Input == nil && !c.NoInput {
		c.Input = map[string]any{} // as models send the input of a tool without arguments
	}
	return &ai.ModelResponse{Message: &ai.Message{Role: ai.RoleModel, Content: []*ai.Part{
		ai.NewToolRequestPart(&ai.ToolRequest{Name: c.Tool, Input: c.Input}),
	}}}, nil
}

// lastTurn returns what the model saw on its latest turn.
func (sm *scripted) lastTurn() turn {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.turns[len(sm.turns)-1]
}

// reset forgets the turns seen so far.
func (sm *scripted) reset() {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.turns = nil
}

// defs returns the definition of the named tool the model was offered on
// its latest turn, nil if it was not.
func (sm *scripted) defs(name string) *ai.ToolDefinition {
	return sm.lastTurn().Defs[name]
}

// ask runs one Generate call whose model calls c with the session's tools
// as they are now, and returns the model's final text.
func (sm *scripted) ask(ctx context.Context, g *genkit.Genkit, opt ai.CommonGenOption, c call) (string, error) {
	prompt, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	resp, err := genkit.Generate(ctx, g, ai.WithModel(sm.model), ai.WithPrompt(string(prompt)), opt)
	if err != nil {
		return "", err
	}
	return resp.Text(), nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
