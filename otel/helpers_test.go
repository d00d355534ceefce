package otel_test

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcplife/mcplife/events"
)

// fixtureServer is an in-process MCP server with two tools: greet, which
// answers, and fail, whose result is an error (isError) after work (on a
// fake clock, in the tests that run in a synctest bubble). Each call's
// _meta goes to metas when it is not nil.
func fixtureServer(metas chan<- map[string]any, work time.Duration) *mcp.Server {
	type args struct {
		Name string `json:"name"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			if metas != nil {
				metas <- req.Params.Meta
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + in.Name}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, req *mcp.CallToolRequest, _ args) (*mcp.CallToolResult, any, error) {
			if metas != nil {
				metas <- req.Params.Meta
			}
			time.Sleep(work)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no"}}, IsError: true}, nil, nil
		})
	return srv
}

// inProcess returns a manager.Options.Dial that connects every server to
// srv over in-memory transports.
func inProcess(srv *mcp.Server) func(context.Context, events.ServerConfig) (mcp.Transport, error) {
	return func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
		serverSide, clientSide := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}
}

// printTree writes the spans as a tree: each span's label under its
// parent, then its events, siblings in label order, so the tree does not
// depend on timing.
func printTree(w io.Writer, spans tracetest.SpanStubs) {
	children := map[string][]tracetest.SpanStub{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
	}
	for _, s := range spans {
		parent := ""
		if s.Parent.IsValid() && ids[s.Parent.SpanID().String()] {
			parent = s.Parent.SpanID().String()
		}
		children[parent] = append(children[parent], s)
	}
	var walk func(parent, indent string)
	walk = func(parent, indent string) {
		list := children[parent]
		sort.SliceStable(list, func(i, j int) bool { return label(list[i]) < label(list[j]) })
		for _, s := range list {
			fmt.Fprintf(w, "%s%s\n", indent, label(s))
			var evs []string
			for _, e := range s.Events {
				evs = append(evs, eventLabel(e))
			}
			sort.Strings(evs)
			for _, e := range evs {
				fmt.Fprintf(w, "%s  · %s\n", indent, e)
			}
			walk(s.SpanContext.SpanID().String(), indent+"  ")
		}
	}
	walk("", "")
}

// label is a span's name, its server when the name does not say it, its
// kind when it is a client span, and its error.type.
func label(s tracetest.SpanStub) string {
	var b strings.Builder
	b.WriteString(s.Name)
	if v, ok := attr(s, "mcplife.server.name"); ok && !strings.HasSuffix(s.Name, " "+v.AsString()) {
		b.WriteString(" (" + v.AsString() + ")")
	}
	var extra []string
	if s.SpanKind.String() == "client" {
		extra = append(extra, "client")
	}
	if v, ok := attr(s, "error.type"); ok {
		extra = append(extra, "error.type="+v.Emit())
	}
	if len(extra) > 0 {
		b.WriteString(" [" + strings.Join(extra, ", ") + "]")
	}
	return b.String()
}

// eventLabel is a span event's name with its server and outcome or
// reason.
func eventLabel(e sdktrace.Event) string {
	var parts []string
	for _, kv := range e.Attributes {
		switch kv.Key {
		case "mcplife.server.name", "mcplife.outcome", "mcplife.reason":
			parts = append(parts, kv.Value.Emit())
		}
	}
	if len(parts) == 0 {
		return e.Name
	}
	return e.Name + " (" + strings.Join(parts, ", ") + ")"
}

// attr returns the value of a span's attribute.
func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}
