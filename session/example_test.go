package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/session"
)

// Start a session on a project whose .mcplife/mcp.json names one stdio MCP
// server, "demo", list the session's tools and call one.
func Example() {
	dir, err := exampleProject()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := embed(context.Background(), dir); err != nil {
		fmt.Println(err)
	}
	// Output:
	// mcp_demo_add from mcp:demo via mcplife
	// mcp_demo_echo from mcp:demo via mcplife
	// hi
}

// embed is the README's embedding snippet: the lines between the markers
// are compared with it by TestREADMEEmbeddingSnippet.
func embed(ctx context.Context, dir string) error {
	// README: begin
	// A nil journal records into mcp-audit's default store.
	s, err := session.Start(ctx, nil, &session.Options{Loader: loader.Options{Cwd: dir}})
	if err != nil {
		return err
	}
	defer s.Close(ctx) // disconnects every server, records SessionClosed, closes the store
	// Optional: wait for the servers that missed the startup gate too.
	if err := s.WaitReady(ctx); err != nil {
		return err
	}
	for _, t := range s.Tools() {
		fmt.Println(t.Name, "from", t.Path) // mcp_demo_echo from mcp:demo via mcplife
	}
	echo, ok := s.Tool("mcp_demo_echo")
	if !ok {
		return errors.New("mcp_demo_echo is missing: see mcp-audit inspect last")
	}
	res, err := echo.Call(ctx, json.RawMessage(`{"text":"hi"}`))
	if err != nil {
		return err // the call was cancelled; server errors are results
	}
	fmt.Println(res.Text())
	// README: end
	return nil
}

// exampleProject writes a project whose .mcplife/mcp.json names one
// server, "demo": this test binary acting as an MCP server.
func exampleProject() (string, error) {
	cmd, args, err := fixture.ChildCommand("only=echo,add")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "project")
	if err != nil {
		return "", err
	}
	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"demo": map[string]any{"command": cmd, "args": args},
	}})
	if err := os.MkdirAll(filepath.Join(dir, ".mcplife"), 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, ".mcplife", "mcp.json"), config, 0o644)
}
