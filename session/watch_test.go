package session_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store"
)

// writeConfig replaces the native config file at path with servers, or
// with raw text when servers is nil, the way editors save: a new file
// renamed over the old one, so the watcher never sees half of it.
func writeConfig(t *testing.T, path string, servers map[string]events.ServerConfig, raw string) {
	t.Helper()
	if servers != nil {
		b, err := json.Marshal(map[string]any{"mcpServers": servers})
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// nextOf reads sub until an event of type typ arrives and returns it.
func nextOf(t *testing.T, sub *journal.Subscription, typ string) events.Event {
	t.Helper()
	for {
		select {
		case env, ok := <-sub.C():
			if !ok {
				t.Fatalf("subscription ended: %v", sub.Err())
			}
			if env.Type != typ {
				continue
			}
			ev, err := events.Decode(env)
			if err != nil {
				t.Fatal(err)
			}
			return ev
		case <-t.Context().Done():
			t.Fatalf("no %s", typ)
		}
	}
}

// sessionPid calls the pid tool of server through the session.
func sessionPid(t *testing.T, s *session.Session, server string) int {
	t.Helper()
	tool, ok := s.Tool("mcp_" + server + "_pid")
	if !ok {
		t.Fatalf("no pid tool of %s in %v", server, names(s.Tools()))
	}
	r, err := tool.Call(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var info fixture.ProcessInfo
	b, err := json.Marshal(r.Result.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	return info.PID
}

// storedLines describes the session's stored events from the first
// ConfigChanged on, of the types a config change concerns, with the
// project directory written as $CWD. A run of ServerConnected and
// ToolsListed events, which parallel connects interleave, is ordered by
// server.
func storedLines(t *testing.T, st store.Store, session, cwd string) []string {
	t.Helper()
	keep := []string{
		events.TypeConfigChanged, events.TypeDisconnected, events.TypeServerDiscovered, events.TypeConnectStarted,
		events.TypeServerConnected, events.TypeToolsListed, events.TypeStartupGateElapsed, events.TypeServerSkipped,
		events.TypeServerInvalid,
	}
	type line struct{ server, text string }
	var lines []line
	started := false
	for env, err := range st.ReadStream(t.Context(), session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		started = started || env.Type == events.TypeConfigChanged
		if started && slices.Contains(keep, env.Type) {
			lines = append(lines, line{events.ServerOf(ev), strings.ReplaceAll(env.Type+" "+events.Describe(ev), cwd, "$CWD")})
		}
	}
	parallel := func(l line) bool {
		return strings.HasPrefix(l.text, events.TypeServerConnected+" ") || strings.HasPrefix(l.text, events.TypeToolsListed+" ")
	}
	for i := 0; i < len(lines); i++ {
		j := i
		for j < len(lines) && parallel(lines[j]) {
			j++
		}
		slices.SortStableFunc(lines[i:j], func(a, b line) int { return strings.Compare(a.server, b.server) })
		i = j
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

// A session that watches its config applies edits as they are saved: an
// edit adding, changing and removing servers leaves the unchanged server's
// process and call in flight alone; a broken edit is recorded and changes
// nothing; the next good edit is compared with the last one applied; and
// a config file created where there was none is picked up.
func TestWatchConfigAppliesEdits(t *testing.T) {
	keep := fixtureConfig(t, "only=sleep,pid")
	change := fixtureConfig(t, "only=echo")
	gone := fixtureConfig(t, "only=echo")
	cwd, home := project(t, map[string]events.ServerConfig{"keep": keep, "change": change, "gone": gone})
	file := filepath.Join(cwd, ".mcplife", "mcp.json")
	j, st := newJournal(t)
	s, err := session.Start(t.Context(), j, &session.Options{
		Loader: loader.Options{Cwd: cwd, Home: home, Env: map[string]string{}},
		// Every round's servers are awaited, whatever the machine's load:
		// the expected outcomes are all ready.
		Manager:     &manager.Options{Gate: time.Minute},
		WatchConfig: true,
		Watcher:     &loader.WatcherOptions{Debounce: 20 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	pid := sessionPid(t, s, "keep")
	sub, err := j.Subscribe(t.Context(), journal.SubscribeOptions{Session: s.ID(),
		Types: []string{events.TypeConfigChanged, events.TypeStartupGateElapsed}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// A call on keep is in flight across the edit.
	inside := fixturetest.NewGate(t)
	sleep, _ := s.Tool("mcp_keep_sleep")
	call := make(chan string, 1)
	go func() {
		r, err := sleep.Call(t.Context(), json.RawMessage(`{"gate":"`+inside.Path()+`"}`))
		if err != nil {
			call <- "error: " + err.Error()
			return
		}
		call <- r.Text()
	}()
	if err := inside.WaitReached(t.Context(), 1); err != nil {
		t.Fatal(err)
	}

	changed := fixtureConfig(t, "only=echo,add")
	added := fixtureConfig(t, "only=echo")
	writeConfig(t, file, map[string]events.ServerConfig{"keep": keep, "change": changed, "added": added}, "")
	cc := nextOf(t, sub, events.TypeConfigChanged).(*events.ConfigChanged)
	if !slices.Equal(cc.Paths, []string{file}) || cc.Error != "" {
		t.Fatalf("ConfigChanged %+v", cc)
	}
	nextOf(t, sub, events.TypeStartupGateElapsed)
	waitFor(t, s, func(ts []session.Tool) bool {
		return has("mcp_added_echo")(ts) && has("mcp_change_add")(ts) && !has("mcp_gone_echo")(ts)
	})
	select {
	case r := <-call:
		t.Fatalf("the call on the unchanged server ended during the edit: %s", r)
	default:
	}
	inside.Release()
	if r := <-call; r != "released" {
		t.Fatalf("call across the edit: %s", r)
	}
	if got := sessionPid(t, s, "keep"); got != pid {
		t.Errorf("keep's pid %d, was %d", got, pid)
	}

	// A broken edit keeps everything running.
	writeConfig(t, file, nil, `{"mcpServers": {`)
	cc = nextOf(t, sub, events.TypeConfigChanged).(*events.ConfigChanged)
	if !slices.Equal(cc.Paths, []string{file}) || !strings.Contains(cc.Error, file) || len(cc.Added)+len(cc.Changed)+len(cc.Removed) != 0 {
		t.Fatalf("ConfigChanged of the broken edit %+v", cc)
	}
	view := s.Manager().View()
	for _, name := range []string{"added", "change", "keep"} {
		if st, _ := view.Server(name); st.Status != "connected" {
			t.Errorf("%s is %s after the broken edit", name, st.Status)
		}
	}
	if got := sessionPid(t, s, "keep"); got != pid {
		t.Errorf("keep's pid %d after the broken edit, was %d", got, pid)
	}

	// The fix is compared with the configs applied before the broken
	// edit: only gone comes back.
	writeConfig(t, file, map[string]events.ServerConfig{"keep": keep, "change": changed, "added": added, "gone": gone}, "")
	cc = nextOf(t, sub, events.TypeConfigChanged).(*events.ConfigChanged)
	if !slices.Equal(cc.Added, []string{"gone"}) || len(cc.Changed)+len(cc.Removed) != 0 || cc.Error != "" {
		t.Fatalf("ConfigChanged of the fix %+v\n%s", cc, strings.Join(storedLines(t, st, s.ID(), cwd), "\n"))
	}
	nextOf(t, sub, events.TypeStartupGateElapsed)

	// A user config file appears where discovery found none.
	userFile := filepath.Join(home, ".config", "mcplife", "mcp.json")
	writeConfig(t, userFile, map[string]events.ServerConfig{"user": fixtureConfig(t, "only=echo")}, "")
	cc = nextOf(t, sub, events.TypeConfigChanged).(*events.ConfigChanged)
	if !slices.Equal(cc.Paths, []string{userFile}) || !slices.Equal(cc.Added, []string{"user"}) {
		t.Fatalf("ConfigChanged of the new file %+v", cc)
	}
	nextOf(t, sub, events.TypeStartupGateElapsed)
	waitFor(t, s, has("mcp_user_echo"))

	want := []string{
		"ConfigChanged paths=[$CWD/.mcplife/mcp.json] added=[added] changed=[change] removed=[gone]",
		"Disconnected change reason=config changed exit=0",
		"Disconnected gone reason=config changed exit=0",
		"ServerDiscovered added transport=stdio source=native/project",
		"ServerDiscovered change transport=stdio source=native/project",
		"ConnectStarted added transport=stdio attempt=1 round=2",
		"ConnectStarted change transport=stdio attempt=2 round=2",
		"ServerConnected added protocol=2026-07-28 peer=mcplife-fixture",
		"ToolsListed added cause=initial count=1 tools=[echo]",
		"ServerConnected change protocol=2026-07-28 peer=mcplife-fixture",
		"ToolsListed change cause=initial count=2 tools=[add echo]",
		"StartupGateElapsed round=2 outcomes=[added=ready change=ready]",
		`ConfigChanged paths=[$CWD/.mcplife/mcp.json] error="config file unreadable: $CWD/.mcplife/mcp.json:1:17: unexpected end of JSON input"`,
		"ConfigChanged paths=[$CWD/.mcplife/mcp.json] added=[gone]",
		"ServerDiscovered gone transport=stdio source=native/project",
		"ConnectStarted gone transport=stdio attempt=2 round=3",
		"ServerConnected gone protocol=2026-07-28 peer=mcplife-fixture",
		"ToolsListed gone cause=initial count=1 tools=[echo]",
		"StartupGateElapsed round=3 outcomes=[gone=ready]",
		"ConfigChanged paths=[" + userFile + "] added=[user]",
		"ServerDiscovered user transport=stdio source=native/user",
		"ConnectStarted user transport=stdio attempt=1 round=4",
		"ServerConnected user protocol=2026-07-28 peer=mcplife-fixture",
		"ToolsListed user cause=initial count=1 tools=[echo]",
		"StartupGateElapsed round=4 outcomes=[user=ready]",
	}
	if diff := cmp.Diff(want, storedLines(t, st, s.ID(), cwd)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

// An edit that makes an entry invalid removes its server and records why.
func TestWatchConfigInvalidEntry(t *testing.T) {
	good := fixtureConfig(t, "only=echo")
	cwd, home := project(t, map[string]events.ServerConfig{"a": good, "b": good})
	file := filepath.Join(cwd, ".mcplife", "mcp.json")
	j, st := newJournal(t)
	s, err := session.Start(t.Context(), j, &session.Options{
		Loader:      loader.Options{Cwd: cwd, Home: home, Env: map[string]string{}},
		WatchConfig: true, Watcher: &loader.WatcherOptions{Debounce: 20 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	sub, err := j.Subscribe(t.Context(), journal.SubscribeOptions{Session: s.ID(), Types: []string{events.TypeServerInvalid}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	writeConfig(t, file, nil, `{"mcpServers": {"a": `+mustJSON(t, good)+`, "b": {"command": ""}}}`)
	inv := nextOf(t, sub, events.TypeServerInvalid).(*events.ServerInvalid)
	if inv.Server != "b" {
		t.Fatalf("ServerInvalid %+v", inv)
	}
	got := storedLines(t, st, s.ID(), cwd)
	want := []string{
		"ConfigChanged paths=[$CWD/.mcplife/mcp.json] removed=[b]",
		"Disconnected b reason=config changed exit=0",
	}
	if len(got) != 3 || !slices.Equal(got[:2], want) || !strings.HasPrefix(got[2], "ServerInvalid b ") {
		t.Errorf("events %q", got)
	}
	if st, _ := s.Manager().View().Server("a"); st.Status != "connected" {
		t.Errorf("a is %s", st.Status)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Start refuses watcher options the watcher would refuse.
func TestWatchConfigOptionsChecked(t *testing.T) {
	j, _ := newJournal(t)
	_, err := session.Start(t.Context(), j, &session.Options{WatchConfig: true, Watcher: &loader.WatcherOptions{Debounce: -time.Second}})
	if err == nil || !strings.Contains(err.Error(), "Debounce") {
		t.Fatalf("Start with a negative debounce: %v", err)
	}
}
