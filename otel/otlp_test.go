package otel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	gotel "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/otel"
	"github.com/mcplife/mcplife/store/memory"
)

// A live session's spans reach an OTLP/HTTP collector on loopback
// through the SDK's batching exporter.
func TestLiveSpansOverOTLP(t *testing.T) {
	ctx := t.Context()
	got := make(chan []string, 8)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "want an OTLP protobuf request on /v1/traces", http.StatusBadRequest)
			return
		}
		var names []string
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				if ss.GetScope().GetName() != otel.ScopeName {
					continue
				}
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		got <- names
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	defer collector.Close()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(collector.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	defer tp.Shutdown(context.Background())

	j, err := journal.New(memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := traced(ctx, j, tp, inProcess(fixtureServer(nil, 0))); err != nil { // flushes the provider
		t.Fatal(err)
	}
	var names []string
	for len(got) > 0 {
		names = append(names, <-got...)
	}
	slices.Sort(names)
	want := []string{"initialize", "mcplife.connect greeter", "mcplife.gate", "mcplife.session",
		"tools/call fail", "tools/call greet", "tools/list"}
	if !slices.Equal(names, want) {
		t.Errorf("collector got %q, want %q", names, want)
	}
}

// CallMeta injects with the global propagator: nothing until the host
// sets one, then traceparent (and tracestate) of the context's span.
func TestCallMetaGlobalPropagator(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("caller").Start(t.Context(), "step")
	defer span.End()
	prev := gotel.GetTextMapPropagator()
	defer gotel.SetTextMapPropagator(prev)

	gotel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	if meta := otel.CallMeta(ctx); meta != nil {
		t.Errorf("CallMeta with no propagator set = %v, want nil", meta)
	}
	gotel.SetTextMapPropagator(propagation.TraceContext{})
	meta := otel.CallMeta(ctx)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if meta["traceparent"] != want {
		t.Errorf("CallMeta = %v, want traceparent %s", meta, want)
	}
	if meta := otel.CallMeta(context.Background()); meta != nil {
		t.Errorf("CallMeta of a context without a span = %v, want nil", meta)
	}
}
