package otel

import (
	"context"

	gotel "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// CallMeta returns the trace context of ctx as _meta keys of a tools/call
// request (traceparent, and tracestate when there is one), injected by
// the global propagator (otel.GetTextMapPropagator); nil when ctx carries
// no span. Plug it into manager.Options.CallMeta so that a server that
// reads the W3C trace context from _meta continues the caller's trace:
//
//	m, err := manager.New(j, id, &manager.Options{CallMeta: otel.CallMeta})
//
// Nothing but the propagator's fields is added; the global propagator is
// a no-op until the host sets one (otel.SetTextMapPropagator).
func CallMeta(ctx context.Context) map[string]any {
	return inject(ctx, gotel.GetTextMapPropagator())
}

// CallMetaWith returns a function for manager.Options.CallMeta that
// injects with p; a nil p is W3C trace context
// (propagation.TraceContext), whatever the global propagator.
func CallMetaWith(p propagation.TextMapPropagator) func(context.Context) map[string]any {
	if p == nil {
		p = propagation.TraceContext{}
	}
	return func(ctx context.Context) map[string]any { return inject(ctx, p) }
}

func inject(ctx context.Context, p propagation.TextMapPropagator) map[string]any {
	carrier := propagation.MapCarrier{}
	p.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	meta := make(map[string]any, len(carrier))
	for k, v := range carrier {
		meta[k] = v
	}
	return meta
}
