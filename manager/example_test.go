package manager_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/store/memory"
)

// Connect two stdio servers, one of which fails at initialize, wait for
// them to settle, and call a tool of the other. The servers are this test
// binary acting as MCP servers.
func Example() {
	ctx := context.Background()
	demoCmd, demoArgs, err := fixture.ChildCommand("only=echo,add")
	if err != nil {
		fmt.Println(err)
		return
	}
	brokenCmd, brokenArgs, _ := fixture.ChildCommand("fail-init")

	st := memory.New()
	defer st.Close()
	j, _ := journal.New(st, nil)
	defer j.Close()
	m, err := manager.New(j, journal.NewSessionID(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close(ctx) // disconnects every server

	res, err := m.ConnectServers(ctx, []events.ServerConfig{
		{Name: "demo", Command: demoCmd, Args: demoArgs},
		{Name: "broken", Command: brokenCmd, Args: brokenArgs},
	}, map[string]events.SourceMeta{"demo": {ProviderName: "example"}})
	if err != nil {
		fmt.Println(err) // the manager is closed, or ctx ended
		return
	}
	for name, err := range res.Errors {
		var se *manager.ServerError
		fmt.Println(name, "failed:", errors.As(err, &se) && se.Op == manager.OpConnect)
	}
	// The gate returns after 250 ms at most; wait for late servers too.
	if err := m.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range m.Tools() {
		fmt.Println(t.Name, "from", t.Path())
	}
	echo, _ := m.Tool("mcp_demo_echo")
	r, err := echo.Call(ctx, map[string]any{"text": "hello"})
	if err != nil {
		fmt.Println(err) // only a cancelled call is an error
		return
	}
	fmt.Println(r.Text())
	// Output:
	// broken failed: true
	// mcp_demo_add from mcp:demo via example
	// mcp_demo_echo from mcp:demo via example
	// hello
}
