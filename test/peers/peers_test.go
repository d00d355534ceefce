package peers

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/lifecycletest"
	"github.com/mcplife/mcplife/internal/peers"
	"github.com/mcplife/mcplife/manager"
)

// launch is one way of starting a stdio peer.
type launch struct {
	name string
	// config returns the server config that starts pkg's entry script
	// (node, script) with args.
	config func(t *testing.T, pkg, node, script string, args ...string) events.ServerConfig
}

// launches are the ways users configure Node servers: the entry script
// directly, through a shell wrapper, and through npx.
var launches = []launch{
	{"direct", func(t *testing.T, _, node, script string, args ...string) events.ServerConfig {
		return events.ServerConfig{Command: node, Args: append([]string{script}, args...)}
	}},
	{"sh", func(t *testing.T, _, node, script string, args ...string) events.ServerConfig {
		line := "exec " + shellQuote(node) + " " + shellQuote(script)
		for _, a := range args {
			line += " " + shellQuote(a)
		}
		return events.ServerConfig{Command: "sh", Args: []string{"-c", line}}
	}},
	{"npx", func(t *testing.T, pkg, _, _ string, args ...string) events.ServerConfig {
		// --no-install: the package must come from the repository's
		// node_modules, which npx finds from the server's working
		// directory.
		return events.ServerConfig{
			Command: "npx",
			Args:    append([]string{"--no-install", pkg}, args...),
			Cwd:     peers.RepoRoot(t),
		}
	}},
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// rootURI is the roots/list entry the manager answers with.
func rootURI(dir string) string {
	return (&url.URL{Scheme: "file", Path: dir}).String()
}

// checkEverything exercises a connected server-everything through the
// manager.
func checkEverything(ctx context.Context, t *testing.T, e *env, server string) {
	t.Helper()
	// Tools that depend on the client's capabilities are registered after
	// initialization, followed by tools/list_changed; the manager
	// re-lists, so the count settles at 13 or 14.
	e.WaitFor(ctx, "server-everything's tools", func() bool { return len(e.Tools(server)) >= 13 })
	names := e.Tools(server)
	if len(names) > 14 || !slices.Contains(names, "echo") {
		t.Fatalf("server-everything lists %d tools %v, want 13 or 14 including echo", len(names), names)
	}
	if res := e.call(ctx, server, "echo", map[string]any{"message": "compat"}); !strings.Contains(res.Text(), "compat") {
		t.Errorf("echo = %q", res.Text())
	}
	if res := e.call(ctx, server, "get-sum", map[string]any{"a": 2, "b": 40}); !strings.Contains(res.Text(), "42") {
		t.Errorf("get-sum = %q", res.Text())
	}
	// The operation reports progress when the call carries a progress
	// token, which a call under manager.WithProgress does.
	progress := make(chan manager.Progress, 8)
	pctx := manager.WithProgress(ctx, func(p manager.Progress) { progress <- p })
	if res := e.call(pctx, server, "trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 2}); !strings.Contains(res.Text(), "completed") {
		t.Errorf("trigger-long-running-operation = %q", res.Text())
	}
	for n := 0; n < 2; n++ {
		select {
		case p := <-progress:
			if p.Total != 2 {
				t.Errorf("progress %+v, want a total of 2", p)
			}
		case <-ctx.Done():
			t.Fatalf("%d of 2 progress notifications arrived", n)
		}
	}
	checkEverythingSurface(ctx, t, e, server)
	// The manager advertises roots and answers roots/list with its cwd.
	if slices.Contains(names, "get-roots-list") {
		if res := e.call(ctx, server, "get-roots-list", nil); !strings.Contains(res.Text(), rootURI(e.Cwd)) {
			t.Errorf("get-roots-list = %q, want it to name %s", res.Text(), rootURI(e.Cwd))
		}
	} else {
		t.Errorf("no get-roots-list tool: the manager should advertise roots; tools %v", names)
	}
	types := e.Types(server)
	t.Logf("events of %s: %v", server, types)
	if !slices.Contains(types, events.TypeServerConnected) || !slices.Contains(types, events.TypeToolsListed) {
		t.Errorf("events %v", types)
	}
}

func TestEverythingStdio(t *testing.T) {
	node, script := peers.Everything(t)
	for _, l := range launches {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := lifecycletest.Context(t)
			marker := newMarker(t)
			cfg := l.config(t, peers.EverythingPackage, node, script, "stdio")
			cfg.Name = "everything"
			cfg.Env = map[string]string{markerVar: marker}
			e.connect(ctx, cfg)
			checkEverything(ctx, t, e, "everything")
			teardown(ctx, t, e, marker)
		})
	}
}

// teardown disconnects everything and checks that the launch left no
// process behind.
func teardown(ctx context.Context, t *testing.T, e *env, marker string) {
	t.Helper()
	running := markedProcesses(marker)
	if len(running) == 0 {
		t.Fatal("found no process of the server before the teardown")
	}
	for _, p := range running {
		t.Logf("server process %d (group %d): %s", p.PID, p.PGID, p.Cmdline)
	}
	if err := e.Manager.DisconnectAll(ctx); err != nil {
		t.Fatalf("DisconnectAll: %v", err)
	}
	if left := markedProcesses(marker); len(left) > 0 {
		t.Logf("just after DisconnectAll, still running: %+v", left)
	}
	waitGone(t, marker)
	if n := len(e.Manager.Tools()); n != 0 {
		t.Errorf("%d tools after DisconnectAll", n)
	}
}

func TestEverythingHTTP(t *testing.T) {
	for _, mode := range []struct{ mode, transport string }{
		{peers.ModeStreamableHTTP, events.TransportHTTP},
		{peers.ModeSSE, events.TransportSSE},
	} {
		t.Run(mode.mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := lifecycletest.Context(t)
			endpoint := peers.StartEverythingHTTP(t, mode.mode)
			e.connect(ctx, events.ServerConfig{Name: "everything", Type: mode.transport, URL: endpoint})
			checkEverything(ctx, t, e, "everything")
			if err := e.Manager.DisconnectAll(ctx); err != nil {
				t.Fatalf("DisconnectAll: %v", err)
			}
			if st := e.Manager.Status("everything"); st != "disconnected" {
				t.Fatalf("status after DisconnectAll: %s", st)
			}
			types := e.Types("everything")
			if types[len(types)-1] != events.TypeDisconnected {
				t.Fatalf("events %v", types)
			}
			// The server outlives the session: a new connection works.
			e.connect(ctx, events.ServerConfig{Name: "everything", Type: mode.transport, URL: endpoint})
			e.call(ctx, "everything", "echo", map[string]any{"message": "again"})
			// Disconnect while the server still runs (it is killed when
			// the test ends, before the manager is closed).
			if err := e.Manager.DisconnectAll(ctx); err != nil {
				t.Fatalf("DisconnectAll: %v", err)
			}
		})
	}
}

func TestFilesystem(t *testing.T) {
	node, script := peers.Filesystem(t)
	for _, l := range launches {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := lifecycletest.Context(t)
			// The manager's cwd holds the file; the server is started with
			// another directory, which the client's roots replace.
			file := filepath.Join(e.Cwd, "hello.txt")
			if err := os.WriteFile(file, []byte("hello from mcplife\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			argDir := t.TempDir()
			if err := os.WriteFile(filepath.Join(argDir, "other.txt"), []byte("other\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			marker := newMarker(t)
			cfg := l.config(t, peers.FilesystemPackage, node, script, argDir)
			cfg.Name = "fs"
			cfg.Env = map[string]string{markerVar: marker}
			e.connect(ctx, cfg)
			names := e.Tools("fs")
			for _, want := range []string{"read_text_file", "list_directory", "list_allowed_directories", "write_file"} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools %v lack %s", names, want)
				}
			}
			waitAllowed(ctx, t, e, e.Cwd)
			res := e.call(ctx, "fs", "read_text_file", map[string]any{"path": file})
			if res.Text() != "hello from mcplife\n" {
				t.Errorf("read_text_file = %q", res.Text())
			}
			var structured map[string]any
			if res.Result.StructuredContent != nil {
				if err := remarshal(res.Result.StructuredContent, &structured); err != nil {
					t.Errorf("structured content: %v", err)
				}
			}
			// The roots replaced the directory the server was started with.
			denied, err := e.Tool("fs", "read_text_file").Call(ctx, map[string]any{"path": filepath.Join(argDir, "other.txt")})
			if err != nil || !denied.Result.IsError {
				t.Errorf("reading outside the roots: %+v %v", denied, err)
			}
			listing := e.call(ctx, "fs", "list_directory", map[string]any{"path": e.Cwd})
			if !strings.Contains(listing.Text(), "hello.txt") {
				t.Errorf("list_directory = %q", listing.Text())
			}
			teardown(ctx, t, e, marker)
		})
	}
}

// waitAllowed waits until server-filesystem reports dir as its allowed
// directory. The server asks for the client's roots right after the
// handshake and applies the answer asynchronously, so this asks again,
// bounded, until it shows.
func waitAllowed(ctx context.Context, t *testing.T, e *env, dir string) {
	t.Helper()
	var last string
	for range 200 {
		res := e.call(ctx, "fs", "list_allowed_directories", nil)
		last = res.Text()
		if strings.Contains(last, dir) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-afterShortPause():
		}
	}
	t.Fatalf("allowed directories %q never named the manager's cwd %s (roots/list answer)", last, dir)
}

// checkEverythingSurface checks server-everything's resources, templates,
// prompts and completions through the manager: listed into the view, read,
// got and completed.
func checkEverythingSurface(ctx context.Context, t *testing.T, e *env, server string) {
	t.Helper()
	if err := e.Manager.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := e.Manager.View().Server(server)
	if len(st.Resources) == 0 || len(st.Templates) == 0 || len(st.Prompts) == 0 {
		t.Fatalf("server-everything: %d resources, %d templates, %d prompts; want some of each", len(st.Resources), len(st.Templates), len(st.Prompts))
	}
	t.Logf("server-everything: %d resources, %d templates, %d prompts", len(st.Resources), len(st.Templates), len(st.Prompts))
	read, err := e.Manager.ReadResource(ctx, server, st.Resources[0].URI)
	if err != nil || len(read.Contents) == 0 || read.Contents[0].URI != st.Resources[0].URI {
		t.Errorf("read %s: %+v %v", st.Resources[0].URI, read, err)
	}
	var prompts []string
	for _, p := range st.Prompts {
		prompts = append(prompts, p.Name)
	}
	if !slices.Contains(prompts, "simple-prompt") {
		t.Fatalf("prompts %v lack simple-prompt", prompts)
	}
	got, err := e.Manager.GetPrompt(ctx, server, "simple-prompt", nil)
	if err != nil || len(got.Messages) == 0 {
		t.Errorf("simple-prompt: %+v %v", got, err)
	}
	if slices.Contains(prompts, "completable-prompt") {
		var arg string
		for _, p := range st.Prompts {
			if p.Name == "completable-prompt" && len(p.Arguments) > 0 {
				arg = p.Arguments[0].Name
			}
		}
		comp, err := e.Manager.Complete(ctx, server, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
			Argument: mcp.CompleteParamsArgument{Name: arg, Value: ""}})
		if err != nil || len(comp.Completion.Values) == 0 {
			t.Errorf("complete completable-prompt/%s: %+v %v", arg, comp, err)
		}
	}
	types := e.Types(server)
	if !slices.Contains(types, events.TypeResourcesListed) || !slices.Contains(types, events.TypePromptsListed) {
		t.Errorf("events %v lack ResourcesListed or PromptsListed", types)
	}
}
