// Command mcp-audit-otlp exports the spans of a session recorded in an
// mcplife event store over OTLP/HTTP, as the otel package's Observer made
// them while the session ran (see otel.Replay).
//
//	go run github.com/mcplife/mcplife/otel/cmd/mcp-audit-otlp --db PATH --otlp URL SESSION
//
// SESSION is a session id, a unique prefix of one, or "last". --db is the
// event store mcp-audit reads (a SQLite file, or postgres://…[?schema=NAME]);
// default $MCP_AUDIT_DB, else the default store. --otlp is the collector's
// OTLP/HTTP endpoint, such as http://localhost:4318 (the path /v1/traces is
// added when the URL has none); default: the exporter's own settings
// ($OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT, else
// localhost:4318), whose headers ($OTEL_EXPORTER_OTLP_HEADERS) are sent
// too. Exit status: 0 exported, 1 failed, 2 usage.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
