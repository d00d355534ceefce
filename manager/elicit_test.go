package manager

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/store/memory"
)

// askingServer dials in-memory servers whose tool "ask" asks the client
// for a form with defaults and returns what it answered, and whose tool
// "think" asks the client's model.
func askingServer(name string, _ events.ServerConfig, _ transport.Resolved, _ string) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message: "the secret question",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"name":     map[string]any{"type": "string", "default": "John Doe"},
				"age":      map[string]any{"type": "integer", "default": 30},
				"verified": map[string]any{"type": "boolean", "default": true},
				"note":     map[string]any{"type": "string"},
			}},
		})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		b, _ := json.Marshal(res)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "think", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 50, Messages: []*mcp.SamplingMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "the private prompt"}},
		}})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

func askingManager(t *testing.T, opts Options) (*Manager, func() []string) {
	t.Helper()
	j := memJournal(t, memory.New())
	t.Cleanup(func() { j.Close() })
	opts.Cwd = t.TempDir()
	m, err := New(j, "s", &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	m.dial = askingServer
	if _, err := m.ConnectServers(t.Context(), []events.ServerConfig{{Name: "asker", Command: "x"}}, nil); err != nil {
		t.Fatal(err)
	}
	story := func() []string {
		if err := j.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		var out []string
		for env, err := range j.Store().ReadStream(t.Context(), "s", 1) {
			if err != nil {
				t.Fatal(err)
			}
			switch env.Type {
			case events.TypeElicitationRequested, events.TypeElicitationAnswered, events.TypeSamplingRequested, events.TypeSamplingAnswered:
				if strings.Contains(string(env.Data), "secret") || strings.Contains(string(env.Data), "private") || strings.Contains(string(env.Data), "John") {
					t.Errorf("%s records content: %s", env.Type, env.Data)
				}
				ev, _ := events.Decode(env)
				out = append(out, env.Type+" "+events.Describe(ev))
			}
		}
		return out
	}
	return m, story
}

func callText(t *testing.T, m *Manager, name string) (string, bool) {
	t.Helper()
	r, err := tool(t, m, name).Call(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.Text(), r.Result.IsError
}

// TestElicitationAcceptedWithDefaults: a host that accepts a form without
// filling it answers with the schema's defaults (SEP-1034); request and
// answer are recorded without the message, the schema or the values.
func TestElicitationAcceptedWithDefaults(t *testing.T) {
	m, story := askingManager(t, Options{Elicit: AcceptElicitationDefaults})
	text, isErr := callText(t, m, "mcp_asker_ask")
	var got mcp.ElicitResult
	if isErr || json.Unmarshal([]byte(text), &got) != nil {
		t.Fatalf("ask: %s", text)
	}
	want := mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "John Doe", "age": float64(30), "verified": true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answer the server got (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{
		"ElicitationRequested asker mode=form fields=4",
		"ElicitationAnswered asker action=accept fields=3",
	}, story()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestElicitationDeclined: the host's answer goes to the server as it is.
func TestElicitationDeclined(t *testing.T) {
	m, story := askingManager(t, Options{Elicit: DeclineElicitation})
	if text, _ := callText(t, m, "mcp_asker_ask"); text != `{"action":"decline"}` {
		t.Errorf("ask: %s", text)
	}
	if diff := cmp.Diff([]string{
		"ElicitationRequested asker mode=form fields=4",
		"ElicitationAnswered asker action=decline fields=0",
	}, story()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestNoCallbackNoCapability: without callbacks the client advertises
// neither elicitation nor sampling, so the server cannot ask, and nothing
// is recorded.
func TestNoCallbackNoCapability(t *testing.T) {
	m, story := askingManager(t, Options{})
	for _, name := range []string{"mcp_asker_ask", "mcp_asker_think"} {
		if text, isErr := callText(t, m, name); !isErr || !strings.Contains(text, "support") {
			t.Errorf("%s without the capability: %v %s", name, isErr, text)
		}
	}
	if got := story(); len(got) != 0 {
		t.Errorf("events: %v", got)
	}
}

// TestSamplingAnswered: the host's model answers; the model and stop
// reason are recorded, not the prompt or the answer.
func TestSamplingAnswered(t *testing.T) {
	m, story := askingManager(t, Options{Sample: func(_ context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", StopReason: "endTurn",
			Content: &mcp.TextContent{Text: "an answer to " + server}}, nil
	}})
	if text, isErr := callText(t, m, "mcp_asker_think"); isErr || text != "an answer to asker" {
		t.Errorf("think: %v %s", isErr, text)
	}
	if diff := cmp.Diff([]string{
		"SamplingRequested asker messages=1 maxTokens=50",
		"SamplingAnswered asker model=test-model stopReason=endTurn",
	}, story()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestAcceptDefaultsDeclinesWhatOnlyAUserCouldFill: a form with a required
// field that has no default cannot be accepted with defaults alone (the
// answer would not satisfy the schema), so it is declined, as a URL
// request is.
func TestAcceptDefaultsDeclinesWhatOnlyAUserCouldFill(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":  map[string]any{"type": "string"},
			"color": map[string]any{"type": "string", "default": "blue"},
		},
	}
	for _, tc := range []struct {
		name     string
		required []string
		mode     string
		want     string
	}{
		{"required fields have defaults", []string{"color"}, "", "accept"},
		{"no required fields", nil, "", "accept"},
		{"a required field without a default", []string{"name", "color"}, "", "decline"},
		{"url", nil, "url", "decline"},
	} {
		s := maps.Clone(schema)
		if tc.required != nil {
			s["required"] = tc.required
		}
		res, err := AcceptElicitationDefaults(t.Context(), "srv", &mcp.ElicitParams{Mode: tc.mode, RequestedSchema: s})
		if err != nil || res.Action != tc.want {
			t.Errorf("%s: %+v %v, want %s", tc.name, res, err, tc.want)
		}
	}
}
