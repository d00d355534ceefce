package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/session"
)

// demoServers are the bundled example servers: this binary re-executed as
// stdio MCP servers. nonce makes their configs new on every demo, so the
// first run starts with a cold cache and the second shows it warm.
func demoServers(self, nonce string) map[string]any {
	server := func(behaviours ...string) map[string]any {
		return map[string]any{"command": self, "args": append([]string{fixtureCommand, "name=demo-" + nonce}, behaviours...)}
	}
	return map[string]any{
		"fast":    server("only=echo,add,media", "instructions=A fast example server."),
		"slow":    server("only=echo,sleep", "slow-list=900ms"),
		"failing": server("fail-init", "stderr=example: cannot reach the backing service"),
		"flaky":   server("only=pid", "exit-after=1200ms"),
	}
}

func runDemo(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("demo", g)
	if pos, err := parseInterleaved(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("demo takes no arguments")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find this program: %w", err)
	}
	// A temporary project and home: the demo neither reads nor touches
	// the user's own configs.
	dir, err := os.MkdirTemp("", "mcplife-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	project, home := filepath.Join(dir, "project"), filepath.Join(dir, "home")
	var nonce [4]byte
	rand.Read(nonce[:])
	config, _ := json.MarshalIndent(map[string]any{"mcpServers": demoServers(self, hex.EncodeToString(nonce[:]))}, "", "  ")
	for _, d := range []string{filepath.Join(project, ".mcplife"), home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(project, ".mcplife", "mcp.json"), config, 0o644); err != nil {
		return err
	}

	db, j, closeStore, err := g.openJournal()
	if err != nil {
		return err
	}
	defer closeStore()
	w := g.stdout
	say := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }

	say("mcplife demo — events go to %s", mustPath(g))
	say("project %s with four example MCP servers (this binary, re-executed):", project)
	say("  fast     answers at once          slow     lists its tools after 0.9 s (beyond the 250 ms gate)")
	say("  failing  fails at initialize      flaky    exits on its own 1.2 s after it starts; reconnected")
	opts := &session.Options{Loader: loader.Options{Cwd: project, Home: home, LookupEnv: func(string) (string, bool) { return "", false }}}

	// Run 1: cold cache. The slow server has no cached tools, so the gate
	// waits for it (correctness over speed).
	say("\n== run 1: cold tool cache")
	s1, err := session.Start(ctx, j, opts)
	if err != nil {
		return err
	}
	printGate(g, s1.LoadResult())
	printServers(g, s1.Manager().View())
	if _, err := callTool1(ctx, g, s1, "fast", "echo", `{"text":"hello from the demo"}`); err != nil {
		s1.Close(ctx)
		return err
	}
	say("\nwaiting for flaky to exit on its own… (its tools stay, deferred, while it reconnects)")
	waitStatus(ctx, s1, "flaky", projector.StatusReconnecting, 10*time.Second)
	printServers(g, s1.Manager().View())
	say("\nflaky is started again after 0.5 s:")
	waitStatus(ctx, s1, "flaky", projector.StatusConnected, 10*time.Second)
	printServers(g, s1.Manager().View())
	if _, err := callTool1(ctx, g, s1, "fast", "add", `{"a":2,"b":3}`); err != nil {
		s1.Close(ctx)
		return err
	}
	s1.Close(ctx)
	say("\nsession %s closed: every server disconnected", s1.ID())

	// Run 2: warm cache. The gate returns after 250 ms with the slow
	// server's tools served from the cache (deferred); they become live
	// when its tools/list arrives.
	say("\n== run 2: warm tool cache")
	start := time.Now()
	s2, err := session.Start(ctx, j, opts)
	if err != nil {
		return err
	}
	defer s2.Close(context.WithoutCancel(ctx))
	say("session started in %s", fmtDur(time.Since(start)))
	printGate(g, s2.LoadResult())
	printTools(g, s2)
	say("\ncalling a deferred tool waits for its server's connection:")
	if _, err := callTool1(ctx, g, s2, "slow", "echo", `{"text":"served once slow connected"}`); err != nil {
		return err
	}
	say("\n== reload: disconnect all, rediscover, reconnect")
	if _, err := s2.Reload(ctx); err != nil {
		return err
	}
	printServers(g, s2.Manager().View())
	if err := s2.Close(ctx); err != nil {
		say("teardown: %v", err)
	}

	say("\n== replay of run 2 (session %s)", s2.ID())
	p := &replayPrinter{g: g}
	for env, err := range db.ReadStream(ctx, s2.ID(), 1) {
		if err != nil {
			return err
		}
		if err := p.print(env); err != nil {
			return err
		}
	}
	if err := verifyOne(ctx, g, db, s2.ID()); err != nil {
		return err
	}
	say("\nnext: mcp-audit sessions | replay last | inspect last --at 260ms | verify --all | timeline last -o startup.svg")
	return nil
}

// waitStatus waits until the named server has status, up to limit.
func waitStatus(ctx context.Context, s *session.Session, server string, status projector.Status, limit time.Duration) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for s.Manager().Status(server) != status {
		select {
		case <-s.Changes():
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
