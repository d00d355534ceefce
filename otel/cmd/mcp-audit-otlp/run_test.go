package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/sqlite"
)

// recordSession records one session into a SQLite store at path: a
// server with one tool, called once.
func recordSession(t *testing.T, path string) string {
	t.Helper()
	ctx := t.Context()
	db, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j, err := journal.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
	})
	s, err := session.Start(ctx, j, &session.Options{
		Servers: []events.ServerConfig{{Name: "greeter", Command: "in-process"}},
		Manager: &manager.Options{ProtocolVersion: "2025-11-25", Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			a, b := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, a, nil); err != nil {
				return nil, err
			}
			return b, nil
		}},
		KeepAbandoned: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	greet, ok := s.Tool("mcp_greeter_greet")
	if !ok {
		t.Fatal("no mcp_greeter_greet")
	}
	if _, err := greet.Call(ctx, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return s.ID()
}

// receiver is an OTLP/HTTP collector on loopback: it decodes each export
// request and hands it on.
func receiver(t *testing.T) (*httptest.Server, <-chan *coltracepb.ExportTraceServiceRequest) {
	got := make(chan *coltracepb.ExportTraceServiceRequest, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- req
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// The command replays a recorded session from a SQLite store and exports
// its spans to an OTLP/HTTP receiver.
func TestExportOverOTLP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	id := recordSession(t, path)
	srv, got := receiver(t)
	var stdout, stderr bytes.Buffer
	if code := Run(t.Context(), []string{"--db", path, "--otlp", srv.URL, "--service", "agent-x", "last"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), id) {
		t.Errorf("stdout %q does not name the session %s", stdout.String(), id)
	}
	var req *coltracepb.ExportTraceServiceRequest
	select {
	case req = <-got:
	default:
		t.Fatal("the receiver got no request")
	}
	var names []string
	for _, rs := range req.ResourceSpans {
		var service string
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		if service != "agent-x" {
			t.Errorf("service.name %q, want agent-x", service)
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				names = append(names, s.Name)
			}
		}
	}
	slices.Sort(names)
	want := []string{"initialize", "mcplife.connect greeter", "mcplife.gate", "mcplife.session", "tools/call greet", "tools/list"}
	if !slices.Equal(names, want) {
		t.Errorf("spans received %q, want %q", names, want)
	}
	if !strings.Contains(stdout.String(), "exported 6 spans") {
		t.Errorf("stdout %q, want the count of spans", stdout.String())
	}
}

// A session the store does not hold, and a bad endpoint, are usage
// errors; a collector that refuses the spans is a failure.
func TestExportErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	recordSession(t, path)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer refusing.Close()
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--db", path, "--otlp", "http://127.0.0.1:1", "nope"}, exitUsage, `no session "nope"`},
		{[]string{"--db", path, "--otlp", "localhost:4318", "last"}, exitUsage, "not an http(s) URL"},
		{[]string{"--db", path}, exitUsage, "usage:"},
		{[]string{"--otlp"}, exitUsage, "flag needs an argument"},
		{[]string{"--db", path, "--otlp", refusing.URL, "last"}, exitError, "export"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(t.Context(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
}

// --help prints the usage, with an example, and succeeds.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run(t.Context(), []string{"--help"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "Example:") {
		t.Errorf("--help: exit %d, stdout %q", code, stdout.String())
	}
}
