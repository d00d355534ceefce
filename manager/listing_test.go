package manager

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

// listFailed checks that server's first list failed with an error that
// wraps ErrListTooLong and contains want, recorded as ToolsListFailed,
// and that the server stayed connected, without tools.
func listFailed(t *testing.T, e *env, res *ConnectResult, server, want string) {
	t.Helper()
	err := res.Errors[server]
	if err == nil || !errors.Is(err, ErrListTooLong) {
		t.Fatalf("%s: error %v, want one that wraps ErrListTooLong", server, err)
	}
	contains(t, "list error", err.Error(), want)
	var failed []string
	for _, f := range ofType[*events.ToolsListFailed](e, e.session) {
		failed = append(failed, f.Server+": "+f.Error)
	}
	if len(failed) != 1 || failed[0] != server+": "+err.Error() {
		t.Fatalf("ToolsListFailed %q, want one of %s with %q", failed, server, err)
	}
	if st := e.m.Status(server); st != projector.StatusConnected {
		t.Fatalf("%s: status %s", server, st)
	}
	for _, tl := range e.m.Tools() {
		if tl.Server == server {
			t.Fatalf("%s has tool %s", server, tl.Name)
		}
	}
	if d := ofType[*events.Disconnected](e, e.session); len(d) > 0 {
		t.Fatalf("disconnected: %+v", d[0])
	}
}

// TestEndlessPagesFailTheListAtOnce: a server whose tools/list pages never
// end fails its list at the page bound, without waiting for the timeout;
// it stays connected, and the session goes on.
func TestEndlessPagesFailTheListAtOnce(t *testing.T) {
	for _, c := range []struct {
		name  string
		pages int // Options.MaxListPages
		want  int
	}{{"default", 0, defaultMaxListPages}, {"configured", 20, 20}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, &Options{MaxListPages: c.pages})
			ctx := testCtx(t)
			endless := stdio(t, "endless", "only=echo", "endless-pages")
			endless.TimeoutMs = ms(3_600_000) // the list must not end by timing out
			res, err := e.m.ConnectServers(ctx, []events.ServerConfig{endless, stdio(t, "other", "only=echo")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			listFailed(t, e, res, "endless", fmt.Sprintf(`MCP server "endless": tools/list: more than %d pages in one list (manager Options.MaxListPages); the list was not taken`, c.want))
			if r, err := tool(t, e.m, "mcp_other_echo").Call(ctx, map[string]any{"text": "hi"}); err != nil || r.Result.IsError || r.Text() != "hi" {
				t.Fatalf("call on the other server: %+v %v", r, err)
			}
		})
	}
}

// TestListOverToolBoundsFails: a list with more tools than a server's
// list may hold, or than the session's other lists leave room for, is
// not taken.
func TestListOverToolBoundsFails(t *testing.T) {
	t.Run("per list", func(t *testing.T) {
		e := newEnv(t, &Options{MaxListTools: 20})
		ctx := testCtx(t)
		res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "many", "only=", "tools=50", "page-size=10")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		listFailed(t, e, res, "many", `MCP server "many": tools/list: more than 20 tools in one list (manager Options.MaxListTools); the list was not taken`)
	})
	t.Run("per session", func(t *testing.T) {
		e := newEnv(t, &Options{MaxSessionTools: 30})
		ctx := testCtx(t)
		if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "first", "only=", "tools=20")}, nil); err != nil || len(res.Errors) > 0 {
			t.Fatal(res.Errors, err)
		}
		res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "second", "only=", "tools=20")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		listFailed(t, e, res, "second", `MCP server "second": tools/list: its 20 tools and the other servers' 20 would be more than the session's 30 tools (manager Options.MaxSessionTools); the list was not taken`)
		if n := len(e.m.Tools()); n != 20 {
			t.Fatalf("%d tools, want the first server's 20", n)
		}
		// The first server's tools leave the session with it.
		if err := e.m.DisconnectServer(ctx, "first"); err != nil {
			t.Fatal(err)
		}
		if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "third", "only=", "tools=25")}, nil); err != nil || len(res.Errors) > 0 {
			t.Fatal(res.Errors, err)
		}
	})
}

func TestNegativeListBoundsRefused(t *testing.T) {
	e := newEnv(t, nil)
	_, err := New(e.j, "s2", &Options{MaxListPages: -1, MaxListTools: -2, MaxSessionTools: -3})
	for _, want := range []string{"negative MaxListPages -1", "negative MaxListTools -2", "negative MaxSessionTools -3"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}
