package otel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/otel"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// BenchmarkToolCall is a tool call to an in-process server, without
// CallMeta (the baseline), with CallMeta injecting the caller's trace
// context, and with an Observer making spans of the recorded events too.
func BenchmarkToolCall(b *testing.B) {
	for _, mode := range []string{"baseline", "callmeta", "callmeta+observer"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			j, err := journal.New(memory.New(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			opts := &manager.Options{Dial: inProcess(fixtureServer(nil, 0))}
			if mode != "baseline" {
				opts.CallMeta = otel.CallMetaWith(nil)
			}
			id := journal.NewSessionID()
			if mode == "callmeta+observer" {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
				defer tp.Shutdown(ctx)
				obs, err := otel.Observe(ctx, j, &otel.Options{TracerProvider: tp, Session: id})
				if err != nil {
					b.Fatal(err)
				}
				defer obs.Close()
			}
			s, err := session.Start(ctx, j, &session.Options{ID: id, KeepAbandoned: true,
				Servers: []events.ServerConfig{{Name: "greeter", Command: "in-process"}}, Manager: opts})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(ctx)
			greet, ok := s.Tool("mcp_greeter_greet")
			if !ok {
				b.Fatal("no greet")
			}
			cctx, span := sdktrace.NewTracerProvider().Tracer("caller").Start(ctx, "agent step")
			defer span.End()
			args := json.RawMessage(`{"name":"Ada"}`)
			for b.Loop() {
				if _, err := greet.Call(cctx, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReplay turns a recorded session of 1000 tool calls into
// spans; the figure is per event.
func BenchmarkReplay(b *testing.B) {
	st := memory.New()
	defer st.Close()
	id := "s-bench"
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	var envs []events.Envelope
	add := func(corr string, ev events.Event) {
		at = at.Add(time.Millisecond)
		envs = append(envs, events.MustNew(id, ev, at).WithCorrelation(corr))
	}
	add("", &events.SessionStarted{Cwd: "/work"})
	add("", &events.ConnectStarted{Server: "greeter", Transport: events.TransportStdio, Attempt: 1, Round: 1})
	add("", &events.ServerConnected{Server: "greeter", ProtocolVersion: manager.DefaultProtocolVersion})
	for i := range 1000 {
		c := fmt.Sprintf("call-%d", i)
		add(c, &events.ToolCallStarted{Server: "greeter", Tool: "greet", Name: "mcp_greeter_greet"})
		add(c, &events.ToolCallFinished{Server: "greeter", Tool: "greet", Duration: time.Millisecond})
	}
	add("", &events.SessionClosed{})
	if _, err := st.Append(context.Background(), id, -1, envs); err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	var provider trace.TracerProvider = tp
	for b.Loop() {
		if err := otel.Replay(context.Background(), st, id, &otel.Options{TracerProvider: provider}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(envs)), "ns/event")
}
