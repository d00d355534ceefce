//go:build unix

package manager

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/proc"
)

// The process-group teardown of stdio servers, which only Unix has.

// processInfo calls the fixture's pid tool on server.
func processInfo(t *testing.T, m *Manager, server string) fixture.ProcessInfo {
	t.Helper()
	r, err := tool(t, m, "mcp_"+server+"_pid").Call(testCtx(t), nil)
	if err != nil || r.Result.IsError {
		t.Fatalf("pid: %+v %v", r, err)
	}
	var info fixture.ProcessInfo
	if err := json.Unmarshal(structuredJSON(r), &info); err != nil {
		t.Fatalf("pid result %s: %v", structuredJSON(r), err)
	}
	return info
}

// readPid reads a pid file written by the spawn-child behaviour.
func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	return pid
}

func TestTeardownLeavesNoProcess(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	dir := t.TempDir()
	plainChild := filepath.Join(dir, "plain")
	shChild := filepath.Join(dir, "sh")
	stubbornChild := filepath.Join(dir, "stubborn")

	// A server wrapped in sh -c (the shell stays as the group leader's
	// parent role: the trailing command makes it fork), a plain server, and
	// one that ignores both a closed stdin and SIGTERM. Each spawns a
	// sleeping child in its group.
	cmd, args := fixturetest.Command(t, "only=pid", "spawn-child="+shChild)
	wrapped := events.ServerConfig{Name: "wrapped", Command: "sh", Args: append([]string{"-c", `"$@"; echo exited >&2`, "sh", cmd}, args...)}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{
		wrapped,
		stdio(t, "plain", "only=pid", "spawn-child="+plainChild),
		stdio(t, "stubborn", "only=pid", "ignore-sigterm", "linger-on-eof", "spawn-child="+stubbornChild),
	}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	var pids []int
	for _, name := range []string{"wrapped", "plain", "stubborn"} {
		info := processInfo(t, e.m, name)
		pids = append(pids, info.PID)
		pids = append(pids, info.Children...)
		if info.PGID == syscall.Getpgrp() {
			t.Fatalf("%s runs in the test's process group", name)
		}
	}
	pids = append(pids, readPid(t, plainChild), readPid(t, shChild), readPid(t, stubbornChild))
	// The shell itself.
	m := e.m
	m.mu.Lock()
	shell := m.servers["wrapped"].conn.proc.Pid()
	m.mu.Unlock()
	pids = append(pids, shell)

	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if proc.Running(pid) {
			t.Errorf("process %d survived the teardown", pid)
		}
	}
	var reasons []string
	for _, d := range ofType[*events.Disconnected](e, "s1") {
		reasons = append(reasons, d.Server+"/"+string(d.Reason))
	}
	equal(t, "disconnected", reasons, []string{"plain/requested", "stubborn/requested", "wrapped/requested"})
}
