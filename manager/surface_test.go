package manager

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/store/memory"
)

// libraryServer is an in-memory go-sdk server with resources, a template,
// prompts and completions; the test adds resources to it to change its
// list and reports resource updates through it.
type libraryServer struct {
	srv *mcp.Server
}

func newLibraryServer() *libraryServer {
	srv := mcp.NewServer(&mcp.Implementation{Name: "library", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "-one", req.Params.Argument.Value + "-two"}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	text := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "contents of " + req.Params.URI}}}, nil
	}
	srv.AddResource(&mcp.Resource{URI: "file:///readme", Name: "readme", MIMEType: "text/plain"}, text)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///books/{title}", Name: "book"}, text)
	srv.AddPrompt(&mcp.Prompt{Name: "review", Description: "review a book", Arguments: []*mcp.PromptArgument{{Name: "title", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Review " + req.Params.Arguments["title"]}}}}, nil
		})
	return &libraryServer{srv: srv}
}

func (ls *libraryServer) dial(string, events.ServerConfig, transport.Resolved, string) (mcp.Transport, error) {
	st, ct := mcp.NewInMemoryTransports()
	if _, err := ls.srv.Connect(context.Background(), st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// TestResourcesAndPrompts: a server's resources, templates and prompts are
// listed after its tools and recorded, the view holds them, and reads,
// prompts, completions and subscriptions reach the server.
func TestResourcesAndPrompts(t *testing.T) {
	ctx := t.Context()
	j := memJournal(t, memory.New())
	defer j.Close()
	var mu sync.Mutex
	var updated []string
	m, err := New(j, "s", &Options{Cwd: t.TempDir(), RelistInterval: time.Millisecond, OnResourceUpdated: func(server, uri string) {
		mu.Lock()
		updated = append(updated, server+" "+uri)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	ls := newLibraryServer()
	m.dial = ls.dial
	updates, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "lib", Command: "x"}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, updates, func() bool {
		st, _ := m.View().Server("lib")
		return len(st.Resources) == 1 && len(st.Prompts) == 1
	})
	st, _ := m.View().Server("lib")
	if diff := cmp.Diff([]events.ResourceDef{{URI: "file:///readme", Name: "readme", MIMEType: "text/plain"}}, st.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if len(st.Templates) != 1 || st.Templates[0].URITemplate != "file:///books/{title}" {
		t.Errorf("templates %+v", st.Templates)
	}
	if want := []events.PromptDef{{Name: "review", Description: "review a book", Arguments: []events.PromptArgument{{Name: "title", Required: true}}}}; !cmp.Equal(want, st.Prompts) {
		t.Errorf("prompts %+v", st.Prompts)
	}

	read, err := m.ReadResource(ctx, "lib", "file:///books/dune")
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "contents of file:///books/dune" {
		t.Fatalf("read: %+v %v", read, err)
	}
	prompt, err := m.GetPrompt(ctx, "lib", "review", map[string]string{"title": "Dune"})
	if err != nil || len(prompt.Messages) != 1 || prompt.Messages[0].Content.(*mcp.TextContent).Text != "Review Dune" {
		t.Fatalf("prompt: %+v %v", prompt, err)
	}
	comp, err := m.Complete(ctx, "lib", &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "review"},
		Argument: mcp.CompleteParamsArgument{Name: "title", Value: "du"}})
	if err != nil || !cmp.Equal(comp.Completion.Values, []string{"du-one", "du-two"}) {
		t.Fatalf("complete: %+v %v", comp, err)
	}
	if _, err := m.ReadResource(ctx, "nobody", "file:///x"); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("read of an unknown server: %v", err)
	}

	// A subscribed resource's update is recorded and reported.
	if err := m.SubscribeResource(ctx, "lib", "file:///readme"); err != nil {
		t.Fatal(err)
	}
	if err := ls.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "file:///readme"}); err != nil {
		t.Fatal(err)
	}
	// A new resource changes the list: listed again with cause list-changed.
	ls.srv.AddResource(&mcp.Resource{URI: "file:///changelog", Name: "changelog"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	waitFor(t, ctx, updates, func() bool {
		st, _ := m.View().Server("lib")
		return len(st.Resources) == 2
	})
	if err := m.UnsubscribeResource(ctx, "lib", "file:///readme"); err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for env, err := range j.Store().ReadStream(ctx, "s", 1) {
		if err != nil {
			t.Fatal(err)
		}
		switch env.Type {
		case events.TypeResourcesListed, events.TypePromptsListed, events.TypeResourceUpdated:
			ev, _ := events.Decode(env)
			got = append(got, env.Type+" "+events.Describe(ev))
		}
	}
	// Whether the prompt list or the resource list comes first is the
	// server's order of answering; both follow the tool list.
	want := []string{
		"ResourcesListed lib cause=initial count=1 resources=[file:///readme] templates=[file:///books/{title}]",
		"PromptsListed lib cause=initial count=1 prompts=[review]",
		"ResourceUpdated lib uri=file:///readme",
		"ResourcesListed lib cause=list-changed count=2 resources=[file:///changelog file:///readme] templates=[file:///books/{title}]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if !cmp.Equal(updated, []string{"lib file:///readme"}) {
		t.Errorf("OnResourceUpdated calls %v", updated)
	}
}
