package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcplife/mcplife/internal/paths"
	"github.com/mcplife/mcplife/otel"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/sqlite"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// errUsage marks an error in the command line or its arguments.
var errUsage = errors.New("usage")

const usage = `usage: mcp-audit-otlp [--db PATH|postgres://…] [--otlp URL] [--service NAME] SESSION

Exports the spans of a recorded session over OTLP/HTTP.

  --db PATH       event store: a SQLite file, or postgres://…[?schema=NAME]
                  (default $MCP_AUDIT_DB, else the default store)
  --otlp URL      OTLP/HTTP endpoint, e.g. http://localhost:4318 (/v1/traces is
                  added to a URL without a path; default: $OTEL_EXPORTER_OTLP_*)
  --service NAME  service.name of the exported spans (default mcplife)
  --timeout D     how long the export may take (default 30s)

SESSION is a session id, a unique prefix of one, or "last".

Example:
  mcp-audit-otlp --otlp http://localhost:4318 last
`

// Run is the command: it parses args, exports, prints what it did to
// stdout and errors to stderr, and returns the exit status.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-audit-otlp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	db := fs.String("db", "", "event store")
	endpoint := fs.String("otlp", "", "OTLP/HTTP endpoint")
	service := fs.String("service", "mcplife", "service.name")
	timeout := fs.Duration("timeout", 30*time.Second, "export timeout")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "mcp-audit-otlp: %v\n%s", err, usage)
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	n, id, err := export(ctx, *db, *endpoint, *service, *timeout, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "mcp-audit-otlp: %v\n", err)
		if errors.Is(err, errUsage) {
			return exitUsage
		}
		return exitError
	}
	fmt.Fprintf(stdout, "exported %d spans of session %s\n", n, id)
	return exitOK
}

// export replays the session arg of the store at db and sends its spans
// to endpoint; it returns how many and the session's id.
func export(ctx context.Context, db, endpoint, service string, timeout time.Duration, arg string) (int, string, error) {
	st, err := openStore(ctx, db)
	if err != nil {
		return 0, "", err
	}
	defer st.Close()
	id, err := resolveSession(ctx, st, arg)
	if err != nil {
		return 0, "", err
	}
	// The spans are made into memory first, then sent in one request,
	// so that the exporter's error is the command's.
	mem := tracetest.NewInMemoryExporter()
	res := resource.NewSchemaless(attribute.String("service.name", service))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem), sdktrace.WithResource(res))
	if err := otel.Replay(ctx, st, id, &otel.Options{TracerProvider: tp}); err != nil {
		return 0, "", err
	}
	// The in-memory exporter forgets its spans when shut down: they are
	// taken first.
	spans := mem.GetSpans().Snapshots()
	if err := tp.Shutdown(ctx); err != nil {
		return 0, "", err
	}
	var opts []otlptracehttp.Option
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return 0, "", fmt.Errorf("%w: --otlp %q is not an http(s) URL", errUsage, endpoint)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exp, err := otlptracehttp.New(ectx, opts...)
	if err != nil {
		return 0, "", fmt.Errorf("otlp exporter: %w", err)
	}
	if err := exp.ExportSpans(ectx, spans); err != nil {
		exp.Shutdown(context.Background())
		return 0, "", fmt.Errorf("export: %w", err)
	}
	if err := exp.Shutdown(ectx); err != nil {
		return 0, "", fmt.Errorf("export: %w", err)
	}
	return len(spans), id, nil
}

// openStore opens the event store at target read-only: a PostgreSQL URL
// or a SQLite file; empty means the default store.
func openStore(ctx context.Context, target string) (store.Store, error) {
	if target == "" {
		def, err := paths.DefaultStore()
		if err != nil {
			return nil, fmt.Errorf("%w: no --db and no default store: %v", errUsage, err)
		}
		target = def
	}
	if paths.IsPostgres(target) {
		conn, schema := postgresTarget(target)
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		db, err := postgres.Open(octx, conn, &postgres.Options{ReadOnly: true, Schema: schema})
		if err != nil {
			return nil, fmt.Errorf("open the PostgreSQL store: %w", err)
		}
		return db, nil
	}
	db, err := sqlite.Open(target, &sqlite.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", target, err)
	}
	return db, nil
}

// postgresTarget splits the store's schema (the query parameter "schema")
// from a PostgreSQL URL, as mcp-audit does.
func postgresTarget(raw string) (connString, schema string) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, ""
	}
	q := u.Query()
	schema = q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	return u.String(), schema
}

// resolveSession maps "last", an exact id or a unique id prefix onto a
// recorded session id, as mcp-audit does ([store.ResolveSession]).
func resolveSession(ctx context.Context, st store.Store, arg string) (string, error) {
	id, err := store.ResolveSession(ctx, st, arg)
	if re, ok := errors.AsType[*store.SessionRefError](err); ok {
		return "", fmt.Errorf("%w: %s", errUsage, re)
	}
	return id, err
}
