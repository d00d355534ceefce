package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/lifecycletest"
	"github.com/mcplife/mcplife/internal/peers"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
)

// sampled is the host model's answer to every sampling request.
const sampled = "sampled answer from the host"

// TestEverythingClientSurface: with elicitation and sampling callbacks
// set, server-everything asks for both, and every content kind it sends
// (image, structured content, resource links, embedded resources,
// annotations) and its log notifications pass through, over stdio and
// streamable HTTP.
func TestEverythingClientSurface(t *testing.T) {
	node, script := peers.Everything(t)
	for _, transport := range []string{"stdio", peers.ModeStreamableHTTP} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			sample := func(_ context.Context, _ string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				if len(req.Messages) == 0 {
					t.Error("a sampling request without messages")
				}
				return &mcp.CreateMessageResult{Model: "host-model", Role: "assistant", StopReason: "endTurn", Content: &mcp.TextContent{Text: sampled}}, nil
			}
			// The user fills the one required field; the manager adds the
			// schema's defaults for the rest (SEP-1034).
			elicit := func(_ context.Context, _ string, req *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}
			e := &env{lifecycletest.NewWith(t, session, &manager.Options{Elicit: elicit, Sample: sample})}
			ctx := lifecycletest.Context(t)
			cfg := events.ServerConfig{Name: "everything", Command: node, Args: []string{script, "stdio"}}
			if transport != "stdio" {
				cfg = events.ServerConfig{Name: "everything", Type: events.TransportHTTP, URL: peers.StartEverythingHTTP(t, transport)}
			}
			e.connect(ctx, cfg)
			// The tools that need the client's capabilities come with a
			// list_changed after initialization.
			e.WaitFor(ctx, "the elicitation and sampling tools", func() bool {
				names := e.Tools("everything")
				return slices.Contains(names, "trigger-elicitation-request") && slices.Contains(names, "trigger-sampling-request")
			})

			if res := e.call(ctx, "everything", "trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 20}); !strings.Contains(res.Text(), sampled) {
				t.Errorf("trigger-sampling-request = %q, want the host's answer in it", res.Text())
			}
			// The server echoes what it received: the name and the defaults.
			if res := e.call(ctx, "everything", "trigger-elicitation-request", nil); !strings.Contains(res.Text(), "Ada") || !strings.Contains(res.Text(), "dark and stormy") {
				t.Errorf("trigger-elicitation-request = %q, want the given name and the filled-in defaults", res.Text())
			}

			img := e.call(ctx, "everything", "get-tiny-image", nil)
			if i := slices.IndexFunc(img.Result.Content, isKind[*mcp.ImageContent]); i < 0 ||
				img.Result.Content[i].(*mcp.ImageContent).MIMEType != "image/png" || !bytes.HasPrefix(img.Result.Content[i].(*mcp.ImageContent).Data, []byte("\x89PNG")) {
				t.Errorf("get-tiny-image content %+v, want a PNG image", kinds(img.Result.Content))
			}
			sc := e.call(ctx, "everything", "get-structured-content", map[string]any{"location": "Chicago"})
			var weather struct{ Temperature, Humidity *float64 }
			if err := remarshal(sc.Result.StructuredContent, &weather); err != nil || weather.Temperature == nil || weather.Humidity == nil {
				t.Errorf("get-structured-content structured %v (%v)", sc.Result.StructuredContent, err)
			}
			links := e.call(ctx, "everything", "get-resource-links", map[string]any{"count": 2})
			if n := countKind(links.Result.Content, "resource_link"); n != 2 || links.Result.Content[slices.IndexFunc(links.Result.Content, isKind[*mcp.ResourceLink])].(*mcp.ResourceLink).URI == "" {
				t.Errorf("get-resource-links content %v, want 2 resource links with URIs", kinds(links.Result.Content))
			}
			ref := e.call(ctx, "everything", "get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1})
			if i := slices.IndexFunc(ref.Result.Content, isKind[*mcp.EmbeddedResource]); i < 0 || ref.Result.Content[i].(*mcp.EmbeddedResource).Resource == nil ||
				ref.Result.Content[i].(*mcp.EmbeddedResource).Resource.URI == "" {
				t.Errorf("get-resource-reference content %v, want an embedded resource", kinds(ref.Result.Content))
			}
			ann := e.call(ctx, "everything", "get-annotated-message", map[string]any{"messageType": "error", "includeImage": true})
			if !slices.ContainsFunc(ann.Result.Content, annotated) || countKind(ann.Result.Content, "image") != 1 {
				t.Errorf("get-annotated-message content %v, want annotations and an image", kinds(ann.Result.Content))
			}

			logs, err := e.Journal.Subscribe(ctx, journal.SubscribeOptions{Types: []string{events.TypeServerLog}})
			if err != nil {
				t.Fatal(err)
			}
			defer logs.Close()
			e.call(ctx, "everything", "toggle-simulated-logging", nil)
			select {
			case <-logs.C(): // it sends its first message at once
			case <-ctx.Done():
				t.Fatal("no ServerLog after toggle-simulated-logging")
			}

			var asked, answered []string
			for _, ev := range e.Events("everything") {
				switch ev := ev.(type) {
				case *events.ElicitationRequested:
					asked = append(asked, "elicitation")
				case *events.ElicitationAnswered:
					answered = append(answered, "elicitation:"+ev.Action)
				case *events.SamplingRequested:
					asked = append(asked, "sampling")
				case *events.SamplingAnswered:
					answered = append(answered, "sampling:"+ev.Model)
				case *events.ServerLog:
					if ev.Level == "" || ev.Text == "" {
						t.Errorf("ServerLog %+v", ev)
					}
				}
			}
			if !slices.Equal(asked, []string{"sampling", "elicitation"}) || !slices.Equal(answered, []string{"sampling:host-model", "elicitation:accept"}) {
				t.Errorf("requests %v, answers %v", asked, answered)
			}
			// No answer's content is recorded.
			for _, env := range e.History() {
				if bytes.Contains(env.Data, []byte(sampled)) {
					t.Errorf("%s holds the sampled answer", env.Type)
				}
			}
			// Disconnect while an HTTP server still runs (it is stopped
			// when the test ends, before the manager is closed).
			if err := e.Manager.DisconnectAll(ctx); err != nil {
				t.Fatalf("DisconnectAll: %v", err)
			}
		})
	}
}

func kinds(cs []mcp.Content) []string {
	var out []string
	for _, c := range cs {
		out = append(out, kindOf(c))
	}
	return out
}

func countKind(cs []mcp.Content, kind string) int {
	n := 0
	for _, c := range cs {
		if kindOf(c) == kind {
			n++
		}
	}
	return n
}

// kindOf returns a content item's type as it reads on the wire.
func kindOf(c mcp.Content) string {
	var item struct{ Type string }
	if b, err := json.Marshal(c); err == nil {
		json.Unmarshal(b, &item)
	}
	return item.Type
}

func isKind[T mcp.Content](c mcp.Content) bool {
	_, ok := c.(T)
	return ok
}

// annotated reports whether a content item carries annotations.
func annotated(c mcp.Content) bool {
	var item struct {
		Annotations json.RawMessage `json:"annotations"`
	}
	if b, err := json.Marshal(c); err == nil {
		json.Unmarshal(b, &item)
	}
	return len(item.Annotations) > 0
}

// remarshal decodes v (structuredContent as the go-sdk decoded it) into
// out through its JSON.
func remarshal(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
