package peers_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/peers"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "peers-test", Version: "1"}, nil)
}

func listTools(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func checkEverythingTools(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	names := listTools(t, cs)
	if len(names) < 13 || len(names) > 14 || !slices.Contains(names, "echo") {
		t.Errorf("server-everything listed %d tools %v, want 13 or 14 including echo", len(names), names)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "compat"}})
	if err != nil {
		t.Fatalf("call echo: %v", err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "compat") {
		t.Errorf("echo result = %+v", res.Content)
	}
}

func TestEverythingStdio(t *testing.T) {
	node, script := peers.Everything(t)
	cmd := exec.Command(node, script, "stdio")
	// The client asks for the newest protocol; server-everything rejects
	// server/discover and the go-sdk falls back to initialize.
	// It does not exit when its stdin closes; a short grace period before
	// SIGTERM keeps the test fast.
	transport := &mcp.CommandTransport{Command: cmd, TerminateDuration: 100 * time.Millisecond}
	cs, err := newClient().Connect(t.Context(), transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Name; got != "mcp-servers/everything" {
		t.Errorf("server name = %q", got)
	}
	checkEverythingTools(t, cs)
}

func TestEverythingHTTP(t *testing.T) {
	t.Run(peers.ModeStreamableHTTP, func(t *testing.T) {
		url := peers.StartEverythingHTTP(t, peers.ModeStreamableHTTP)
		cs, err := newClient().Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		checkEverythingTools(t, cs)
	})
	t.Run(peers.ModeSSE, func(t *testing.T) {
		url := peers.StartEverythingHTTP(t, peers.ModeSSE)
		cs, err := newClient().Connect(t.Context(), &mcp.SSEClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		checkEverythingTools(t, cs)
	})
}

func TestFilesystem(t *testing.T) {
	node, script := peers.Filesystem(t)
	root := t.TempDir()
	file := filepath.Join(root, "hello.txt")
	if err := os.WriteFile(file, []byte("hello from mcplife\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, root)
	cs, err := newClient().Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if names := listTools(t, cs); !slices.Contains(names, "read_text_file") {
		t.Fatalf("tools = %v, want read_text_file", names)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": file}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("read_text_file = %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello from mcplife\n" {
		t.Errorf("read_text_file content = %+v", res.Content[0])
	}
}

func TestRepoRoot(t *testing.T) {
	root := peers.RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "package.json")); err != nil {
		t.Errorf("repository root %s has no package.json: %v", root, err)
	}
}
