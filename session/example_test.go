package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// Start a session on a project whose .mcplife/mcp.json names one stdio MCP
// server, and print the session's tools.
func Example() {
	ctx := context.Background()
	project, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(project)
	os.MkdirAll(filepath.Join(project, ".mcplife"), 0o755)
	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		// The example server is this test binary acting as an MCP server.
		"demo": map[string]any{"command": os.Args[0], "args": []string{fixture.ChildArg, "only=echo,add"}},
	}})
	os.WriteFile(filepath.Join(project, ".mcplife", "mcp.json"), config, 0o644)

	st := memory.New() // or sqlite.Open(path, nil) to keep the history
	defer st.Close()
	j, _ := journal.New(st, nil)
	defer j.Close()

	s, err := session.Start(ctx, session.Options{Journal: j, Cwd: project, Home: project})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(ctx)
	for _, t := range s.Tools() {
		fmt.Println(t.Name, "from", t.Path)
	}
	// Output:
	// mcp_demo_add from mcp:demo via mcplife
	// mcp_demo_echo from mcp:demo via mcplife
}
