package session_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
)

// holdHandler runs onHold, synchronously, when the config watch logs that
// it reads a file again, and signals held: the test acts in that window
// without depending on how long it is.
type holdHandler struct {
	onHold func()
	held   chan struct{} // buffered 1
	once   sync.Once
}

func (h *holdHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *holdHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *holdHandler) WithGroup(string) slog.Handler            { return h }
func (h *holdHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "MCP config file empty or unreadable; reading it again" {
		h.once.Do(func() {
			h.onHold()
			h.held <- struct{}{}
		})
	}
	return nil
}

// A save that truncates the config first and writes it after shows an
// empty file for a moment. That moment is read again before anything is
// disconnected: written back as it was, nothing changes and nothing is
// recorded; written with new content, it is one edit; left empty, it is
// a broken edit that changes nothing. A file caught half written is read
// again the same way.
func TestWatchConfigTruncateThenWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// half is what the save's first half leaves ("": an empty file).
		half string
		// then is what the save writes after the truncation (nil: nothing).
		then func(servers map[string]events.ServerConfig) map[string]events.ServerConfig
		// want are the ConfigChanged events before the next edit's.
		want []string
	}{
		{name: "same content", then: func(s map[string]events.ServerConfig) map[string]events.ServerConfig { return s }},
		{name: "new content", then: func(s map[string]events.ServerConfig) map[string]events.ServerConfig {
			return map[string]events.ServerConfig{"s0": s["s0"], "s2": s["s1"]}
		}, want: []string{"ConfigChanged paths=[$CWD/.mcplife/mcp.json] added=[s2] removed=[s1]"}},
		{name: "half written, same content", half: `{"mcpServers": {"s0": `,
			then: func(s map[string]events.ServerConfig) map[string]events.ServerConfig { return s }},
		{name: "stays empty", want: []string{
			`ConfigChanged paths=[$CWD/.mcplife/mcp.json] error="config file emptied (delete it, or write {}, to remove its servers): $CWD/.mcplife/mcp.json: empty"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fixtureConfig(t, "only=echo,pid")
			servers := map[string]events.ServerConfig{"s0": srv, "s1": srv}
			cwd, home := project(t, servers)
			file := filepath.Join(cwd, ".mcplife", "mcp.json")
			// The save's second half: written in place, as a shell
			// redirection or an editor writing in place does.
			write := func() {
				if tc.then == nil {
					return
				}
				b, err := json.Marshal(map[string]any{"mcpServers": tc.then(servers)})
				if err != nil {
					t.Error(err)
					return
				}
				if err := os.WriteFile(file, b, 0o644); err != nil {
					t.Error(err)
				}
			}
			h := &holdHandler{onHold: write, held: make(chan struct{}, 1)}
			j, st := newJournal(t)
			s, err := session.Start(t.Context(), j, &session.Options{
				Loader:      loader.Options{Cwd: cwd, Home: home, Env: map[string]string{}},
				WatchConfig: true, Watcher: &loader.WatcherOptions{Debounce: 20 * time.Millisecond},
				Manager: &manager.Options{Logger: slog.New(h)},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			if err := s.WaitReady(t.Context()); err != nil {
				t.Fatal(err)
			}
			pids := map[string]int{"s0": sessionPid(t, s, "s0"), "s1": sessionPid(t, s, "s1")}
			sub, err := j.Subscribe(t.Context(), journal.SubscribeOptions{Session: s.ID(), Types: []string{events.TypeConfigChanged, events.TypeStartupGateElapsed}})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()

			if err := os.WriteFile(file, []byte(tc.half), 0o644); err != nil {
				t.Fatal(err)
			}
			// The watch reads the empty file and holds, and the save's
			// write lands while it holds; a watch that does not hold
			// records a ConfigChanged for the empty file first.
			seen := 0
			select {
			case <-h.held:
			case env := <-sub.C():
				if env.Type != events.TypeConfigChanged {
					t.Fatalf("%s before any ConfigChanged", env.Type)
				}
				ev, _ := events.Decode(env)
				t.Errorf("the first half of the save was applied at once: %s", events.Describe(ev))
				seen++
				write()
			case <-t.Context().Done():
				t.Fatal("the empty file was never read")
			}
			// What the save is expected to record, before the next edit.
			for ; seen < len(tc.want); seen++ {
				nextOf(t, sub, events.TypeConfigChanged)
			}

			// The next edit marks the end: whatever the save caused is
			// recorded before its ConfigChanged.
			after := map[string]events.ServerConfig{"barrier": srv}
			for name, cfg := range servers {
				after[name] = cfg
			}
			if tc.then != nil {
				after = tc.then(servers)
				after["barrier"] = srv
			}
			writeConfig(t, file, after, "")
			for {
				if cc := nextOf(t, sub, events.TypeConfigChanged).(*events.ConfigChanged); slices.Contains(cc.Added, "barrier") {
					break
				}
			}
			nextOf(t, sub, events.TypeStartupGateElapsed)

			var got []string
			for _, l := range storedLines(t, st, s.ID(), cwd) {
				if strings.HasPrefix(l, events.TypeConfigChanged+" ") || strings.HasPrefix(l, events.TypeDisconnected+" ") {
					got = append(got, l)
				}
			}
			want := slices.Clone(tc.want)
			if tc.name == "new content" {
				want = append(want, "Disconnected s1 reason=config changed exit=0")
			}
			want = append(want, "ConfigChanged paths=[$CWD/.mcplife/mcp.json] added=[barrier]")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
			for name, pid := range pids {
				if _, kept := after[name]; !kept {
					continue
				}
				if got := sessionPid(t, s, name); got != pid {
					t.Errorf("%s's pid %d, was %d: it was restarted", name, got, pid)
				}
			}
		})
	}
}

// signalHandler signals on seen each time a record with message msg is
// logged.
type signalHandler struct {
	msg  string
	seen chan struct{}
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *signalHandler) WithGroup(string) slog.Handler            { return h }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return nil
}

// Claude Code rewrites ~/.claude.json for its own state (prompt history,
// costs) far more often than for its servers: a rewrite that changes no
// server is no config change, and records nothing.
func TestWatchConfigRewriteWithoutServerChange(t *testing.T) {
	srv := fixtureConfig(t, "only=echo")
	cwd, home := project(t, map[string]events.ServerConfig{"s0": srv})
	claude := filepath.Join(home, ".claude.json")
	state := func(history string) string {
		return `{"numStartups": 3, "mcpServers": {"cc": ` + mustJSON(t, srv) + `}, "projects": {` + mustJSON(t, cwd) +
			`: {"history": [{"display": ` + mustJSON(t, history) + `}]}}}`
	}
	writeConfig(t, claude, nil, state("first prompt"))
	h := &signalHandler{msg: "MCP config files changed; no server changed", seen: make(chan struct{}, 1)}
	j, _ := newJournal(t)
	s, err := session.Start(t.Context(), j, &session.Options{
		Loader:      loader.Options{Cwd: cwd, Home: home, Env: map[string]string{}},
		WatchConfig: true, Watcher: &loader.WatcherOptions{Debounce: 20 * time.Millisecond},
		Manager: &manager.Options{Logger: slog.New(h)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, has("mcp_cc_echo"))
	sub, err := j.Subscribe(t.Context(), journal.SubscribeOptions{Session: s.ID(), Types: []string{events.TypeConfigChanged}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	for i := range 3 {
		writeConfig(t, claude, nil, state("prompt "+strings.Repeat("x", i)))
		select {
		case <-h.seen:
		case env := <-sub.C():
			ev, _ := events.Decode(env)
			t.Fatalf("a rewrite that changed no server was recorded: %s", strings.ReplaceAll(events.Describe(ev), home, "$HOME"))
		case <-t.Context().Done():
			t.Fatal("the rewrite was never read")
		}
	}
}
