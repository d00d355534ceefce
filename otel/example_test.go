package otel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/otel"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// A session's spans, from the events it recorded: an in-process server
// with one tool that answers and one that fails, a call to each, and the
// span tree the Observer made of it.
func Example() {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(ctx)
	j, err := journal.New(memory.New(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	dial := inProcess(fixtureServer(nil, 0))
	if err := traced(ctx, j, tp, dial); err != nil {
		fmt.Println(err)
		return
	}
	printTree(os.Stdout, exp.GetSpans())
	// Output:
	// mcplife.session
	//   · mcplife.disconnected (greeter, requested)
	//   · mcplife.server.discovered (greeter)
	//   mcplife.connect greeter
	//     initialize (greeter) [client]
	//   mcplife.gate
	//     · mcplife.gate.outcome (greeter, ready)
	//   tools/call fail (greeter) [client, error.type=tool_error]
	//   tools/call greet (greeter) [client]
	//   tools/list (greeter) [client]
}

// traced is the README's snippet: the lines between the markers are
// compared with it by TestREADMESnippet.
func traced(ctx context.Context, j *journal.Journal, tp *sdktrace.TracerProvider, dial func(context.Context, events.ServerConfig) (mcp.Transport, error)) error {
	// README: begin
	id := journal.NewSessionID()
	obs, err := otel.Observe(ctx, j, &otel.Options{TracerProvider: tp, Session: id})
	if err != nil {
		return err
	}
	defer obs.Close()
	s, err := session.Start(ctx, j, &session.Options{
		ID:      id,
		Servers: []events.ServerConfig{{Name: "greeter", Command: "in-process"}},
		// CallMeta puts the caller's traceparent into each call's _meta.
		Manager: &manager.Options{ProtocolVersion: "2025-11-25", Dial: dial, CallMeta: otel.CallMeta},
	})
	if err != nil {
		return err
	}
	for _, name := range []string{"mcp_greeter_greet", "mcp_greeter_fail"} {
		if t, ok := s.Tool(name); ok {
			if _, err := t.Call(ctx, json.RawMessage(`{"name":"Ada"}`)); err != nil {
				return err
			}
		}
	}
	if err := s.Close(ctx); err != nil {
		return err
	}
	// Every event recorded so far is a span now; the provider exports them.
	if err := obs.Flush(ctx); err != nil {
		return err
	}
	// README: end
	return tp.ForceFlush(ctx)
}
