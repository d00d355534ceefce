package manager

import (
	"testing"

	"github.com/mcplife/mcplife/events"
)

// TestStdioServerCarriesTheSessionID: a stdio server's process carries
// the session's id in its environment (MCPLIFE_SESSION), where a host
// started after this one was killed looks for what it left running; a
// config's own env cannot replace it.
func TestStdioServerCarriesTheSessionID(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	plain := stdio(t, "plain", "only=env")
	forging := stdio(t, "forging", "only=env")
	forging.Env = map[string]string{"MCPLIFE_SESSION": "another-session"}
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{plain, forging}, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mcp_plain_env", "mcp_forging_env"} {
		r, err := tool(t, e.m, name).Call(ctx, map[string]any{"name": "MCPLIFE_SESSION"})
		if err != nil || r.Text() != e.session {
			t.Errorf("%s: MCPLIFE_SESSION = %+v, %v; want %q", name, r, err, e.session)
		}
	}
}
