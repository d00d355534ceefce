package manager

import (
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/projector"
)

// TestOversizedResultFailsOnlyTheCall: a result over the message size
// limit fails its call with an error naming the server and the limit; the
// server stays connected and answers the next call, and the failure is
// recorded as the call's, not as a disconnect.
func TestOversizedResultFailsOnlyTheCall(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int // Options.MaxMessageSize
		bytes int // the result's text
		shown string
	}{
		{"default", 0, 17 << 20, "16 MiB"},
		{"configured", 1 << 20, 1<<20 + 1, "1 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, &Options{MaxMessageSize: c.limit})
			ctx := testCtx(t)
			res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "bulky", "only=big_result,echo")}, nil)
			if err != nil || len(res.Errors) > 0 {
				t.Fatal(res.Errors, err)
			}
			r, err := tool(t, e.m, "mcp_bulky_big_result").Call(ctx, map[string]any{"bytes": c.bytes})
			if err != nil || !r.Result.IsError {
				t.Fatalf("oversized call: %.200v %v", r, err)
			}
			for _, want := range []string{`MCP server "bulky" sent a result of `, "over the " + c.shown + " limit on one message (manager Options.MaxMessageSize)"} {
				contains(t, "oversized call", r.Text(), want)
			}
			t.Logf("error: %s", r.Text())
			r, err = tool(t, e.m, "mcp_bulky_echo").Call(ctx, map[string]any{"text": "still here"})
			if err != nil || r.Result.IsError || r.Text() != "still here" {
				t.Fatalf("next call: %+v %v", r, err)
			}
			if st := e.m.Status("bulky"); st != projector.StatusConnected {
				t.Fatalf("status %s", st)
			}
			if d := ofType[*events.Disconnected](e, "s1"); len(d) > 0 {
				t.Fatalf("disconnected: %+v", d[0])
			}
			fins := ofType[*events.ToolCallFinished](e, "s1")
			if len(fins) != 2 || !fins[0].IsError || !strings.Contains(fins[0].Error, "over the "+c.shown+" limit") || fins[1].IsError {
				t.Fatalf("ToolCallFinished %+v", fins)
			}
		})
	}
}

func TestNegativeMaxMessageSizeRefused(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := New(e.j, "s2", &Options{MaxMessageSize: -1}); err == nil || !strings.Contains(err.Error(), "negative MaxMessageSize") {
		t.Fatalf("New: %v", err)
	}
}

// TestTooDeepMessageFailsItsRequestAtOnce: a tools/list answer and a
// tools/call result nested deeper than the client decodes fail their
// request at once with a reason naming the depth, instead of waiting out
// the timeout; the server stays connected and answers the next request.
func TestTooDeepMessageFailsItsRequestAtOnce(t *testing.T) {
	checkTooDeepFailsItsRequest(t, func(name string, behaviours ...string) events.ServerConfig {
		return stdio(t, name, behaviours...)
	})
}

// TestTooDeepMessageOverHTTPFailsItsRequestAtOnce: over streamable HTTP
// (event streams and JSON bodies) and legacy SSE, as over stdio, a
// tools/list answer and a tools/call result nested deeper than the client
// decodes fail their request at once with a reason naming the depth,
// instead of being taken for a broken connection; the server stays
// connected and answers the next request.
func TestTooDeepMessageOverHTTPFailsItsRequestAtOnce(t *testing.T) {
	for _, tr := range []struct {
		name string
		opts *fixturetest.HTTPOptions
		typ  string
	}{
		{"streamable", nil, events.TransportHTTP},
		{"streamable-json", &fixturetest.HTTPOptions{JSONResponse: true}, events.TransportHTTP},
		{"sse", &fixturetest.HTTPOptions{SSE: true}, events.TransportSSE},
	} {
		t.Run(tr.name, func(t *testing.T) {
			checkTooDeepFailsItsRequest(t, func(name string, behaviours ...string) events.ServerConfig {
				return events.ServerConfig{Name: name, Type: tr.typ, URL: fixturetest.Serve(t, tr.opts, behaviours...)}
			})
		})
	}
}

// checkTooDeepFailsItsRequest runs the too-deep list and call against
// servers made by server: each fails its request with the depth's reason,
// and the server stays connected.
func checkTooDeepFailsItsRequest(t *testing.T, server func(name string, behaviours ...string) events.ServerConfig) {
	const reason = "nested too deep (more than 1000 levels of objects and arrays)"
	connected := func(t *testing.T, e *env, name string) {
		t.Helper()
		if st := e.m.Status(name); st != projector.StatusConnected {
			t.Fatalf("%s: status %s", name, st)
		}
		if d := ofType[*events.Disconnected](e, e.session); len(d) > 0 {
			t.Fatalf("disconnected: %+v", d[0])
		}
	}
	t.Run("tools-list", func(t *testing.T) {
		e := newEnv(t, nil)
		ctx := testCtx(t)
		res, err := e.m.ConnectServers(ctx, []events.ServerConfig{server("deeplist", "only=echo", "deep-schema=1500")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		listErr := res.Errors["deeplist"]
		if listErr == nil {
			t.Fatalf("errors %v", res.Errors)
		}
		contains(t, "list error", listErr.Error(), `MCP server "deeplist" sent a result `+reason)
		failed := ofType[*events.ToolsListFailed](e, e.session)
		if len(failed) != 1 || failed[0].Server != "deeplist" || !strings.Contains(failed[0].Error, reason) {
			t.Fatalf("ToolsListFailed %+v", failed)
		}
		connected(t, e, "deeplist")
	})
	t.Run("tools-call", func(t *testing.T) {
		e := newEnv(t, nil)
		ctx := testCtx(t)
		if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{server("deepcall", "only=echo", "deep-result=1500")}, nil); err != nil || len(res.Errors) > 0 {
			t.Fatal(res.Errors, err)
		}
		r, err := tool(t, e.m, "mcp_deepcall_deep_result").Call(ctx, nil)
		if err != nil || !r.Result.IsError {
			t.Fatalf("deep call: %.200v %v", r, err)
		}
		contains(t, "deep call", r.Text(), `MCP server "deepcall" sent a result `+reason)
		r, err = tool(t, e.m, "mcp_deepcall_echo").Call(ctx, map[string]any{"text": "still here"})
		if err != nil || r.Result.IsError || r.Text() != "still here" {
			t.Fatalf("next call: %+v %v", r, err)
		}
		connected(t, e, "deepcall")
	})
}
