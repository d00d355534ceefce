package manager

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
)

func TestRingBufferKeepsTheLastBytes(t *testing.T) {
	r := newRingBuffer(8)
	r.Write([]byte("abc"))
	if got := string(r.Bytes()); got != "abc" {
		t.Fatalf("got %q", got)
	}
	r.Write([]byte("defgh"))
	if got := string(r.Bytes()); got != "abcdefgh" {
		t.Fatalf("got %q", got)
	}
	r.Write([]byte("ij"))
	if got := string(r.Bytes()); got != "cdefghij" {
		t.Fatalf("got %q", got)
	}
	r.Write([]byte("0123456789"))
	if got := string(r.Bytes()); got != "23456789" {
		t.Fatalf("got %q", got)
	}
	for i := range 20 {
		r.Write([]byte{byte('a' + i)})
	}
	if got := string(r.Bytes()); got != "mnopqrst" {
		t.Fatalf("got %q", got)
	}
}

func TestValidateConfigMessages(t *testing.T) {
	tests := []struct {
		name string
		cfg  events.ServerConfig
		want string
	}{
		{"ok", events.ServerConfig{Command: "x"}, ""},
		{"both", events.ServerConfig{Command: "x", URL: "http://h"}, `Server "both": both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`},
		{"nocmd", events.ServerConfig{Type: "stdio"}, `Server "nocmd": stdio server requires "command" field`},
		{"nourl", events.ServerConfig{Type: "sse"}, `Server "nourl": sse server requires "url" field`},
		{"nourlh", events.ServerConfig{Type: "http"}, `Server "nourlh": http server requires "url" field`},
		{"weird", events.ServerConfig{Type: "ws", URL: "ws://h"}, `Server "weird": unknown server type "ws"`},
		{"bad name!", events.ServerConfig{Command: "x"}, `Server "bad name!": invalid server name (must match ^[A-Za-z0-9_.:-]{1,100}$)`},
	}
	for _, tt := range tests {
		err := validateConfig(tt.name, tt.cfg)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s: %v does not wrap ErrInvalidConfig", tt.name, err)
			}
		}
		if got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestScrubberRemovesResolvedValues(t *testing.T) {
	res := resolveConfig(context.Background(), "s", events.ServerConfig{
		Env:     map[string]string{"A": "TOKEN_VAR", "B": "x"},
		Headers: map[string]string{"Authorization": "Bearer sekrit-123"},
	}, ResolverFunc(func(_ context.Context, v string) (string, error) {
		if v == "TOKEN_VAR" {
			return "resolved-secret-value", nil
		}
		return v, nil
	}), discardLogger())
	if res.env["A"] != "resolved-secret-value" || res.headers["Authorization"] != "Bearer sekrit-123" {
		t.Fatalf("resolved %v %v", res.env, res.headers)
	}
	got := res.scrubText("boom: resolved-secret-value and Bearer sekrit-123 via https://h/?token=abc")
	for _, s := range []string{"resolved-secret-value", "sekrit", "abc"} {
		if strings.Contains(got, s) {
			t.Errorf("scrubbed text %q still contains %q", got, s)
		}
	}
}

func TestResolverErrorOmitsTheEntry(t *testing.T) {
	res := resolveConfig(context.Background(), "s", events.ServerConfig{
		Env: map[string]string{"KEEP": "v1", "DROP": "!fail"},
	}, ResolverFunc(func(_ context.Context, v string) (string, error) {
		if v == "!fail" {
			return "", errors.New("command failed")
		}
		return v, nil
	}), discardLogger())
	if _, ok := res.env["DROP"]; ok || res.env["KEEP"] != "v1" {
		t.Fatalf("env %v", res.env)
	}
}

// TestProcessTerminateKillsTheGroup starts a shell that leaves a background
// child behind and checks that teardown leaves no live member of the
// group.
func TestProcessTerminateKillsTheGroup(t *testing.T) {
	old := stdinGrace
	stdinGrace = 50 * time.Millisecond
	t.Cleanup(func() { stdinGrace = old })

	p, err := startProcess("sh", []string{"-c", "sleep 1000 >/dev/null 2>&1 & echo $!; echo started >&2; cat >/dev/null; sleep 1000"}, os.Environ(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.terminate(); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	if groupAlive(p.Pid()) {
		t.Fatalf("process group %d still has live members", p.Pid())
	}
	if alive(child) {
		t.Fatalf("background child %d survived", child)
	}
	if st := p.exitStatus(); st == nil {
		t.Fatal("no exit status after terminate")
	}
	if got := p.stderrTail(); got != "started" {
		t.Fatalf("stderr %q", got)
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	_, state, ok := procGroup(pid)
	return ok && state != 'Z' && state != 'X'
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
