package verify_test

import (
	"context"
	"fmt"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

// Check a recorded session whose server listed its tools before it was
// connected and whose tool call never finished.
func Example() {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	j, _ := journal.New(st, nil)
	defer j.Close()
	id := "session-1"
	j.Append(ctx, id,
		&events.ServerDiscovered{Server: "git", Transport: events.TransportStdio},
		&events.ConnectStarted{Server: "git", Transport: events.TransportStdio, Attempt: 1, Round: 1},
		&events.ToolsListed{Server: "git", Count: 0},
		&events.ServerConnected{Server: "git"},
	)
	j.AppendCorrelated(ctx, id, "call-1", &events.ToolCallStarted{Server: "git", Tool: "status", Name: "mcp_git_status"})
	j.Append(ctx, id, &events.SessionClosed{Reason: "closed"})

	c := verify.NewChecker(id)
	for env, err := range st.ReadStream(ctx, id, 1) {
		if err != nil {
			fmt.Println(err)
			return
		}
		c.Apply(env)
	}
	for _, v := range c.Finish() {
		fmt.Println(v.Seq, v.Rule)
	}
	// Output:
	// 3 list-after-connected
	// 5 call-finished-once
}
