package manager

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

// A name the session exposed keeps meaning its tool: server "My" sorts
// before "my_server", and its tool server_echo, added later, sanitises to
// mcp_my_server_echo, my_server's echo. The newcomer gets the suffix, and
// the name still calls my_server's echo, also after my_server was
// disconnected, while My's tool was the only one of that base name, and
// after my_server came back. A replay of the session names every tool the
// same way.
func TestExposedNameKeepsItsTool(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	mine, other := stdio(t, "my_server", "only=echo"), stdio(t, "My", "only=change_tools")
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{mine, other}, nil); err != nil {
		t.Fatal(err)
	}
	const name = "mcp_my_server_echo"
	sum := sha256.Sum256([]byte("My\x00server_echo"))
	suffixed := name + "_" + hex.EncodeToString(sum[:])[:8]
	means := func(when, name, server, tool string) {
		t.Helper()
		tl, ok := e.m.Tool(name)
		if !ok {
			t.Fatalf("%s: no tool %s in %v", when, name, toolNames(e.m.Tools()))
		}
		if tl.Server != server || tl.Original != tool {
			t.Fatalf("%s: %s means %s/%s, want %s/%s", when, name, tl.Server, tl.Original, server, tool)
		}
	}
	means("at start", name, "my_server", "echo")

	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool(t, e.m, "mcp_my_change_tools").Call(ctx, map[string]any{"add": "server_echo"})
	if err != nil || res.Result.IsError {
		t.Fatalf("change_tools: %+v %v", res, err)
	}
	hasNewcomer := func() bool {
		for _, tl := range e.m.Tools() {
			if tl.Server == "My" && tl.Original == "server_echo" {
				return true
			}
		}
		return false
	}
	waitFor(t, ctx, updates, hasNewcomer)
	means("after My listed server_echo", name, "my_server", "echo")
	means("after My listed server_echo", suffixed, "My", "server_echo")
	if res, err := tool(t, e.m, name).Call(ctx, map[string]any{"text": "hi"}); err != nil || res.Result.IsError || res.Text() != "hi" {
		t.Fatalf("call %s: %+v %v", name, res, err)
	}
	calls := ofType[*events.ToolCallStarted](e, e.session)
	if last := calls[len(calls)-1]; last.Server != "my_server" || last.Tool != "echo" {
		t.Fatalf("%s called %s/%s, want my_server/echo", name, last.Server, last.Tool)
	}

	if err := e.m.DisconnectServer(ctx, "my_server"); err != nil {
		t.Fatal(err)
	}
	if srv, orig, ok := e.m.Resolve(name); ok {
		t.Fatalf("with my_server disconnected, %s means %s/%s; want nothing", name, srv, orig)
	}
	means("with my_server disconnected", suffixed, "My", "server_echo")

	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{mine}, nil); err != nil {
		t.Fatal(err)
	}
	means("after my_server came back", name, "my_server", "echo")
	means("after my_server came back", suffixed, "My", "server_echo")
	if cs := e.m.View().Collisions(); len(cs) != 1 || cs[0] != (projector.Collision{Name: name,
		Kept: projector.ToolRef{Server: "my_server", Tool: "echo"}, Ref: projector.ToolRef{Server: "My", Tool: "server_echo"}, Assigned: suffixed}) {
		t.Errorf("Collisions = %+v", cs)
	}
	checkReplay(t, e)
}
