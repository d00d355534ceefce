package otel

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names: the two client histograms of the MCP semantic
// conventions, and mcplife's gauge of live servers.
const (
	MetricOperationDuration = "mcp.client.operation.duration"
	MetricSessionDuration   = "mcp.client.session.duration"
	MetricConnectedServers  = "mcplife.servers.connected"
)

// DurationBuckets are the bucket boundaries, in seconds, that the MCP
// semantic conventions give both duration histograms.
var DurationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// instruments are the metrics the translator records.
type instruments struct {
	op, sess metric.Float64Histogram
	// connected counts live connections; the gauge reports it.
	connected atomic.Int64
	reg       metric.Registration
}

func newInstruments(m metric.Meter) (*instruments, error) {
	in := &instruments{}
	var err error
	in.op, err = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received."),
		metric.WithExplicitBucketBoundaries(DurationBuckets...))
	if err != nil {
		return nil, err
	}
	in.sess, err = m.Float64Histogram(MetricSessionDuration, metric.WithUnit("s"),
		metric.WithDescription("The duration of the MCP session as observed on the MCP client."),
		metric.WithExplicitBucketBoundaries(DurationBuckets...))
	if err != nil {
		return nil, err
	}
	g, err := m.Int64ObservableGauge(MetricConnectedServers, metric.WithUnit("{server}"),
		metric.WithDescription("The MCP servers connected now, over every session observed."))
	if err != nil {
		return nil, err
	}
	in.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(g, in.connected.Load())
		return nil
	}, g)
	if err != nil {
		return nil, err
	}
	return in, nil
}

func (in *instruments) operation(d time.Duration, kv []attribute.KeyValue) {
	in.op.Record(context.Background(), d.Seconds(), metric.WithAttributes(kv...))
}

func (in *instruments) session(d time.Duration, kv []attribute.KeyValue) {
	in.sess.Record(context.Background(), d.Seconds(), metric.WithAttributes(kv...))
}

func (in *instruments) live(delta int64) { in.connected.Add(delta) }

func (in *instruments) close() {
	if in.reg != nil {
		in.reg.Unregister()
	}
}
