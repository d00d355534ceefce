package projector

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcplife/mcplife/events"
)

var srcProject = events.SourceMeta{Provider: "claude-code", ProviderName: "Claude Code", Path: "/p/.mcp.json", Level: events.LevelProject}

func discovered(name string, cfg events.ServerConfig) *events.ServerDiscovered {
	return &events.ServerDiscovered{Server: name, Source: srcProject, Transport: cfg.Transport(), ConfigHash: cfg.Hash(), Config: cfg.Redact()}
}

func listed(name string, ds []events.ToolDef) *events.ToolsListed {
	return &events.ToolsListed{Server: name, Tools: ds, Count: len(ds), ToolsHash: events.HashTools(ds), Cause: events.CauseInitial}
}

// TestToolViewTransitions folds short event sequences and compares the
// resulting server state.
func TestToolViewTransitions(t *testing.T) {
	cfg := events.ServerConfig{Command: "node", Args: []string{"fs.js"}, Env: map[string]string{"K": "v"}}
	two := defs("fs", 2)
	other := defs("other", 1)
	type step struct {
		after time.Duration
		ev    events.Event
	}
	tests := []struct {
		name  string
		steps []step
		want  ServerState
	}{
		{
			name:  "discovered stays disconnected",
			steps: []step{{0, discovered("fs", cfg)}},
			want: ServerState{Name: "fs", Status: StatusDisconnected, Transport: events.TransportStdio, Source: srcProject,
				ConfigHash: cfg.Hash(), Config: withName(cfg.Redact(), "fs")},
		},
		{
			name:  "connect started",
			steps: []step{{0, &events.ConnectStarted{Server: "fs", Transport: events.TransportStdio, Attempt: 1}}},
			want:  ServerState{Name: "fs", Status: StatusConnecting, Transport: events.TransportStdio, Attempt: 1, ConnectStartedAt: t0},
		},
		{
			name: "connected",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Attempt: 1}},
				{10 * time.Millisecond, &events.ServerConnected{Server: "fs", PeerName: "fs-server", PeerVersion: "1.0", ProtocolVersion: "2025-11-25", Instructions: "be nice"}},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Attempt: 1, PeerName: "fs-server", PeerVersion: "1.0", ProtocolVersion: "2025-11-25",
				Instructions: "be nice", ConnectStartedAt: t0, ConnectedAt: t0.Add(10 * time.Millisecond)},
		},
		{
			name: "shared",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Transport: events.TransportShared, Attempt: 1}},
				{0, &events.ServerConnected{Server: "fs", Transport: events.TransportShared, SharedInstance: "fs-0123abcd"}},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Transport: events.TransportShared, SharedInstance: "fs-0123abcd", Attempt: 1,
				ConnectStartedAt: t0, ConnectedAt: t0},
		},
		{
			// No shared host could be used: the session ran the server
			// itself, which its ServerConnected says.
			name: "asked to share, ran here",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Transport: events.TransportShared, Attempt: 1}},
				{0, &events.ServerConnected{Server: "fs", Pid: 42, Transport: events.TransportStdio}},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Transport: events.TransportStdio, NotShared: true, Pid: 42, Attempt: 1,
				ConnectStartedAt: t0, ConnectedAt: t0},
		},
		{
			// A new attempt forgets how the last one went.
			name: "reconnect of a shared server",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Transport: events.TransportShared, Attempt: 1}},
				{0, &events.ServerConnected{Server: "fs", Pid: 42, Transport: events.TransportStdio}},
				{0, &events.Disconnected{Server: "fs", Reason: events.ReasonProcessExited, Reconnecting: true}},
				{0, &events.ConnectStarted{Server: "fs", Transport: events.TransportShared, Attempt: 2}},
			},
			want: ServerState{Name: "fs", Status: StatusConnecting, Transport: events.TransportShared, Pid: 42, Attempt: 2, ConnectStartedAt: t0},
		},
		{
			name: "tools listed",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Attempt: 1}},
				{10 * time.Millisecond, &events.ServerConnected{Server: "fs"}},
				{5 * time.Millisecond, listed("fs", two)},
				{5 * time.Millisecond, listed("fs", other)},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Attempt: 1, Tools: other,
				ConnectStartedAt: t0, ConnectedAt: t0.Add(10 * time.Millisecond), ToolsListedAt: t0.Add(15 * time.Millisecond)},
		},
		{
			name: "connect failed clears tools",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Attempt: 1}},
				{0, &events.CachedToolsServed{Server: "fs", Tools: two, CacheAge: time.Hour}},
				{time.Second, &events.ConnectFailed{Server: "fs", Error: "boom", TimedOut: true}},
			},
			want: ServerState{Name: "fs", Status: StatusDisconnected, Attempt: 1, Error: "boom", ConnectStartedAt: t0},
		},
		{
			name: "tools list failed keeps tools",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Attempt: 1}},
				{0, &events.ServerConnected{Server: "fs"}},
				{0, listed("fs", two)},
				{0, &events.ToolsListFailed{Server: "fs", Error: "list broke"}},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Attempt: 1, Tools: two, Error: "list broke",
				ConnectStartedAt: t0, ConnectedAt: t0, ToolsListedAt: t0},
		},
		{
			name: "successful list clears a list error",
			steps: []step{
				{0, &events.ServerConnected{Server: "fs"}},
				{0, &events.ToolsListFailed{Server: "fs", Error: "list broke"}},
				{0, listed("fs", two)},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Tools: two, ConnectedAt: t0, ToolsListedAt: t0},
		},
		{
			// A connection that took a fresh cached list instead of a
			// tools/list has those tools live, replacing the deferred ones.
			name: "tools taken from the cache are live",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Attempt: 1}},
				{0, &events.CachedToolsServed{Server: "fs", Tools: two, CacheAge: time.Hour}},
				{10 * time.Millisecond, &events.ServerConnected{Server: "fs"}},
				{0, &events.ToolsListed{Server: "fs", Tools: two, Count: 2, ToolsHash: events.HashTools(two), Cause: events.CauseCache,
					CacheAge: time.Minute, CacheHints: events.CacheHints{TTLMs: 120_000, CacheScope: "public"}}},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Attempt: 1, Tools: two,
				ConnectStartedAt: t0, ConnectedAt: t0.Add(10 * time.Millisecond), ToolsListedAt: t0.Add(10 * time.Millisecond)},
		},
		{
			name: "cached tools are deferred",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Attempt: 1}},
				{250 * time.Millisecond, &events.CachedToolsServed{Server: "fs", Tools: two, CacheAge: time.Hour}},
			},
			want: ServerState{Name: "fs", Status: StatusConnecting, Attempt: 1, Tools: two, Deferred: true, CacheAge: time.Hour, ConnectStartedAt: t0},
		},
		{
			name: "cached tools while the first list of a connected server is pending",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Attempt: 1}},
				{10 * time.Millisecond, &events.ServerConnected{Server: "fs"}},
				{240 * time.Millisecond, &events.CachedToolsServed{Server: "fs", Tools: two, CacheAge: time.Hour}},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Attempt: 1, Tools: two, Deferred: true, CacheAge: time.Hour,
				ConnectStartedAt: t0, ConnectedAt: t0.Add(10 * time.Millisecond)},
		},
		{
			name: "live tools replace deferred ones",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Attempt: 1}},
				{0, &events.CachedToolsServed{Server: "fs", Tools: two, CacheAge: time.Hour}},
				{time.Second, &events.ServerConnected{Server: "fs"}},
				{time.Second, listed("fs", two)},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Attempt: 1, Tools: two, ConnectStartedAt: t0,
				ConnectedAt: t0.Add(time.Second), ToolsListedAt: t0.Add(2 * time.Second)},
		},
		{
			name: "cached tools never replace live ones",
			steps: []step{
				{0, &events.ServerConnected{Server: "fs"}},
				{0, listed("fs", other)},
				{0, &events.CachedToolsServed{Server: "fs", Tools: two, CacheAge: time.Hour}},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, Tools: other, ConnectedAt: t0, ToolsListedAt: t0},
		},
		{
			name: "an empty live list is live too",
			steps: []step{
				{0, &events.ServerConnected{Server: "fs"}},
				{0, listed("fs", nil)},
				{0, &events.CachedToolsServed{Server: "fs", Tools: two}},
			},
			want: ServerState{Name: "fs", Status: StatusConnected, ConnectedAt: t0, ToolsListedAt: t0},
		},
		{
			name: "disconnected removes tools",
			steps: []step{
				{0, &events.ConnectStarted{Server: "fs", Attempt: 1}},
				{0, &events.ServerConnected{Server: "fs"}},
				{0, listed("fs", two)},
				{time.Minute, &events.Disconnected{Server: "fs", Reason: events.ReasonProcessExited, Error: "exit status 1"}},
			},
			want: ServerState{Name: "fs", Status: StatusDisconnected, Attempt: 1, Error: "exit status 1", DisconnectReason: events.ReasonProcessExited,
				ConnectStartedAt: t0, ConnectedAt: t0, ToolsListedAt: t0},
		},
		{
			name: "reconnect clears error and reason",
			steps: []step{
				{0, &events.ServerConnected{Server: "fs"}},
				{0, &events.Disconnected{Server: "fs", Reason: events.ReasonTransportClosed, Error: "EOF"}},
				{time.Second, &events.ConnectStarted{Server: "fs", Attempt: 2}},
			},
			want: ServerState{Name: "fs", Status: StatusConnecting, Attempt: 2, ConnectStartedAt: t0.Add(time.Second)},
		},
		{
			name: "a list after the disconnect brings no tools back",
			steps: []step{
				{0, &events.ServerConnected{Server: "fs"}},
				{0, &events.Disconnected{Server: "fs", Reason: events.ReasonRequested}},
				{0, listed("fs", two)},
				{0, &events.CachedToolsServed{Server: "fs", Tools: two}},
			},
			want: ServerState{Name: "fs", Status: StatusDisconnected, DisconnectReason: events.ReasonRequested, ConnectedAt: t0},
		},
		{
			name: "a list after the session closed brings no tools back",
			steps: []step{
				{0, &events.ServerConnected{Server: "fs"}},
				{0, &events.SessionClosed{}},
				{0, listed("fs", two)},
			},
			want: ServerState{Name: "fs", Status: StatusDisconnected, ConnectedAt: t0},
		},
		{
			name: "invalid server",
			steps: []step{
				{0, &events.ServerInvalid{Server: "fs", Error: `Server "fs": stdio server requires "command" field`, Source: srcProject}},
			},
			want: ServerState{Name: "fs", Status: StatusDisconnected, Source: srcProject, Error: `Server "fs": stdio server requires "command" field`},
		},
		{
			name: "session closed disconnects all",
			steps: []step{
				{0, &events.ServerConnected{Server: "fs"}},
				{0, listed("fs", two)},
				{time.Second, &events.SessionClosed{Reason: "exit"}},
			},
			want: ServerState{Name: "fs", Status: StatusDisconnected, ConnectedAt: t0, ToolsListedAt: t0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder("s1", 0)
			v := NewToolView("s1")
			for _, st := range tt.steps {
				v.Apply(r.after(st.after).add(st.ev))
			}
			got, ok := v.Server("fs")
			if !ok {
				t.Fatal(`Server("fs") not found`)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("state mismatch (-want +got):\n%s", diff)
			}
			if got := v.Status("fs"); got != tt.want.Status {
				t.Errorf("Status = %q, want %q", got, tt.want.Status)
			}
			if c := v.Counts(); c.Applied != uint64(len(tt.steps)) {
				t.Errorf("Counts = %+v, want %d applied", c, len(tt.steps))
			}
		})
	}
}

func withName(c events.ServerConfig, name string) events.ServerConfig {
	c.Name = name
	return c
}

func TestToolViewReadyAfter(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	v.Apply(r.add(&events.ConnectStarted{Server: "a"}))
	if s, _ := v.Server("a"); func() bool { _, ok := s.ReadyAfter(); return ok }() {
		t.Error("ReadyAfter ok before any tool list")
	}
	v.Apply(r.after(40 * time.Millisecond).add(&events.ServerConnected{Server: "a"}))
	v.Apply(r.after(12 * time.Millisecond).add(listed("a", defs("x", 1))))
	v.Apply(r.after(time.Second).add(listed("a", defs("y", 1)))) // a refresh does not move it
	s, _ := v.Server("a")
	if d, ok := s.ReadyAfter(); !ok || d != 52*time.Millisecond {
		t.Errorf("ReadyAfter = %v, %v; want 52ms, true", d, ok)
	}
}

func TestToolViewUnknownServerStatus(t *testing.T) {
	v := NewToolView("s")
	if got := v.Status("nope"); got != StatusDisconnected {
		t.Errorf("Status of unknown server = %q, want %q", got, StatusDisconnected)
	}
	if _, ok := v.Server("nope"); ok {
		t.Error("Server of unknown server reported ok")
	}
}

func TestToolViewToolsAndResolve(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	for _, ev := range []events.Event{
		discovered("Git", events.ServerConfig{Command: "git-mcp"}),
		&events.ServerConnected{Server: "Git"},
		listed("Git", []events.ToolDef{{Name: "git_status"}, {Name: "log"}, {Name: "Log"}}),
		&events.ConnectStarted{Server: "web"},
		&events.CachedToolsServed{Server: "web", Tools: []events.ToolDef{{Name: "fetch"}}},
	} {
		v.Apply(r.add(ev))
	}
	want := []Tool{
		{Name: "mcp_git_log", Server: "Git", Original: "Log", Def: events.ToolDef{Name: "Log"}, Source: srcProject},
		{Name: "mcp_git_log_" + wantHash("Git", "log"), Server: "Git", Original: "log", Def: events.ToolDef{Name: "log"}, Source: srcProject},
		{Name: "mcp_git_status", Server: "Git", Original: "git_status", Def: events.ToolDef{Name: "git_status"}, Source: srcProject},
		{Name: "mcp_web_fetch", Server: "web", Original: "fetch", Def: events.ToolDef{Name: "fetch"}, Deferred: true},
	}
	if diff := cmp.Diff(want, v.Tools()); diff != "" {
		t.Errorf("Tools mismatch (-want +got):\n%s", diff)
	}
	for _, tool := range want {
		ref, ok := v.Resolve(tool.Name)
		if !ok || ref != (ToolRef{tool.Server, tool.Original}) {
			t.Errorf("Resolve(%q) = %v, %v; want %v/%v", tool.Name, ref, ok, tool.Server, tool.Original)
		}
	}
	if _, ok := v.Resolve("mcp_nope"); ok {
		t.Error("Resolve of an unknown name reported ok")
	}
	if got := v.Collisions(); len(got) != 1 || got[0].Ref != (ToolRef{"Git", "log"}) {
		t.Errorf("Collisions = %+v, want Git/log renamed", got)
	}
	if v.ToolCount() != 4 {
		t.Errorf("ToolCount = %d, want 4", v.ToolCount())
	}
	// The returned slice is a copy.
	got := v.Tools()
	got[0].Name = "changed"
	if v.Tools()[0].Name != "mcp_git_log" {
		t.Error("modifying the result of Tools changed the view")
	}
}

func TestToolViewFilters(t *testing.T) {
	tools := []events.ToolDef{{Name: "read_file"}, {Name: "read_dir"}, {Name: "write_file"}, {Name: "delete"}, {Name: "read_file"}}
	tests := []struct {
		name              string
		enabled, disabled []string
		wantExposed       []string
		wantHidden        []string
	}{
		{"no filters", nil, nil, []string{"read_file", "read_dir", "write_file", "delete"}, nil},
		{"enabled glob", []string{"read_*"}, nil, []string{"read_file", "read_dir"}, []string{"delete", "write_file"}},
		{"disabled exact", nil, []string{"delete"}, []string{"read_file", "read_dir", "write_file"}, []string{"delete"}},
		{"disabled wins", []string{"read_*", "delete"}, []string{"*_dir", "delete"}, []string{"read_file"}, []string{"delete", "read_dir", "write_file"}},
		{"character class", []string{"[rw]*_file"}, nil, []string{"read_file", "write_file"}, []string{"delete", "read_dir"}},
		{"malformed pattern matches nothing", []string{"[", "delete"}, nil, []string{"delete"}, []string{"read_dir", "read_file", "write_file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder("s", 0)
			v := NewToolView("s")
			v.Apply(r.add(discovered("fs", events.ServerConfig{Command: "fs", EnabledTools: tt.enabled, DisabledTools: tt.disabled})))
			v.Apply(r.add(&events.ServerConnected{Server: "fs"}))
			v.Apply(r.add(listed("fs", tools)))
			s, _ := v.Server("fs")
			if diff := cmp.Diff(tt.wantExposed, names(s.Tools), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("exposed mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHidden, s.Hidden, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("hidden mismatch (-want +got):\n%s", diff)
			}
			var gotOriginals []string
			for _, tool := range v.Tools() {
				gotOriginals = append(gotOriginals, tool.Original)
			}
			if len(gotOriginals) != len(tt.wantExposed) || v.ToolCount() != len(tt.wantExposed) {
				t.Errorf("Tools has %v (count %d), want %d tools", gotOriginals, v.ToolCount(), len(tt.wantExposed))
			}
		})
	}
}

func TestToolViewRediscoveryRefilters(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	v.Apply(r.add(discovered("fs", events.ServerConfig{Command: "fs"})))
	v.Apply(r.add(&events.ServerConnected{Server: "fs"}))
	v.Apply(r.add(listed("fs", []events.ToolDef{{Name: "a"}, {Name: "b"}})))
	before := v.Version()
	v.Apply(r.add(discovered("fs", events.ServerConfig{Command: "fs", DisabledTools: []string{"a"}})))
	if v.Version() == before {
		t.Error("Version did not move when a filter hid a tool")
	}
	if got := v.Tools(); len(got) != 1 || got[0].Original != "b" {
		t.Errorf("Tools = %+v, want only b", got)
	}
}

// TestToolViewRediscoveryChangesSource: a server rediscovered from another
// config file keeps its tools, which now carry the new source.
func TestToolViewRediscoveryChangesSource(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	cfg := events.ServerConfig{Command: "fs"}
	v.Apply(r.add(discovered("fs", cfg)))
	v.Apply(r.add(&events.ServerConnected{Server: "fs"}))
	v.Apply(r.add(listed("fs", []events.ToolDef{{Name: "a"}})))
	if got := v.Tools(); len(got) != 1 || got[0].Source != srcProject {
		t.Fatalf("Tools = %+v, want a from the project source", got)
	}
	before := v.Version()
	srcUser := events.SourceMeta{Provider: "claude-code", ProviderName: "Claude Code", Path: "/home/u/.claude.json", Level: events.LevelUser}
	d := discovered("fs", cfg)
	d.Source = srcUser
	v.Apply(r.add(d))
	if v.Version() == before {
		t.Error("Version did not move when the tools' source changed")
	}
	if got := v.Tools(); len(got) != 1 || got[0].Source != srcUser {
		t.Errorf("Tools = %+v, want a from the user source", got)
	}
	if st, _ := v.Server("fs"); st.Source != srcUser {
		t.Errorf("server source %+v, want %+v", st.Source, srcUser)
	}
}

func TestToolViewVersion(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	two := defs("fs", 2)
	steps := []struct {
		ev   events.Event
		bump bool
	}{
		{discovered("fs", events.ServerConfig{Command: "fs"}), true}, // a server appears
		{discovered("fs", events.ServerConfig{Command: "fs"}), false},
		{&events.ConnectStarted{Server: "fs"}, true},
		{&events.CachedToolsServed{Server: "fs", Tools: two}, true},
		{&events.ServerConnected{Server: "fs"}, true},
		{listed("fs", two), true}, // deferred → live
		{listed("fs", two), false},
		{&events.ToolListChanged{Server: "fs"}, false},
		{&events.ToolCallStarted{Server: "fs", Tool: "fs_0"}, false},
		{&events.ToolsListFailed{Server: "fs", Error: "x"}, false},
		{listed("fs", defs("fs", 3)), true},
		{&events.Disconnected{Server: "fs", Reason: events.ReasonRequested}, true},
		{&events.Disconnected{Server: "fs", Reason: events.ReasonRequested}, false},
	}
	for i, st := range steps {
		before := v.Version()
		v.Apply(r.add(st.ev))
		if bumped := v.Version() != before; bumped != st.bump {
			t.Errorf("step %d (%s): version moved = %v, want %v", i, st.ev.Type(), bumped, st.bump)
		}
	}
}

func TestToolViewSkipsOtherSessionsUnknownAndStale(t *testing.T) {
	mine := newRecorder("mine", 0)
	v := NewToolView("mine")
	v.Apply(mine.add(&events.ServerConnected{Server: "a"}))
	v.Apply(mine.add(listed("a", defs("a", 1))))
	want := v.Clone()

	theirs := newRecorder("theirs", mine.seq)
	v.Apply(theirs.add(&events.ConnectFailed{Server: "a", Error: "theirs"}))
	mine.seq = theirs.seq
	v.Apply(mine.raw("ServerExploded", 1, `{"server":"a"}`))                 // unknown type
	v.Apply(mine.raw(events.TypeDisconnected, 99, `{"server":"a"}`))         // newer schema
	v.Apply(mine.raw(events.TypeDisconnected, 1, `{"server":`))              // malformed
	v.Apply(mine.raw(events.TypeToolCallStarted, 1, `{"server":"a","tool"`)) // unused type, not decoded
	stale := mine.envs[0]
	v.Apply(stale)

	if diff := cmp.Diff(want.Servers(), v.Servers()); diff != "" {
		t.Errorf("skipped envelopes changed the view (-want +got):\n%s", diff)
	}
	wantCounts := Counts{Applied: 2, Ignored: 2, Stale: 1, Unknown: 2, Undecodable: 1}
	if diff := cmp.Diff(wantCounts, v.Counts()); diff != "" {
		t.Errorf("counts mismatch (-want +got):\n%s", diff)
	}
	if got, want := v.LastSeq(), mine.seq; got != want {
		t.Errorf("LastSeq = %d, want %d (the highest seen)", got, want)
	}
}

func TestToolViewUnstoredEnvelopesApply(t *testing.T) {
	v := NewToolView("s")
	v.Apply(events.MustNew("s", &events.ConnectStarted{Server: "a"}, t0))
	v.Apply(events.MustNew("s", &events.ServerConnected{Server: "a"}, t0))
	if got := v.Status("a"); got != StatusConnected {
		t.Errorf("Status = %q, want connected", got)
	}
	if v.LastSeq() != 0 {
		t.Errorf("LastSeq = %d, want 0", v.LastSeq())
	}
}

func TestToolViewDiscoveryErrors(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	v.Apply(r.add(&events.DiscoveryFailed{Path: ".mcp.json", Error: "permission denied"}))
	want := []events.DiscoveryFailed{{Path: ".mcp.json", Error: "permission denied"}}
	if diff := cmp.Diff(want, v.DiscoveryErrors()); diff != "" {
		t.Errorf("DiscoveryErrors mismatch (-want +got):\n%s", diff)
	}
}

func TestToolViewClone(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	v.Apply(r.add(discovered("a", events.ServerConfig{Command: "a", Args: []string{"x"}})))
	v.Apply(r.add(&events.ServerConnected{Server: "a"}))
	v.Apply(r.add(listed("a", defs("a", 2))))
	_ = v.Tools()
	c := v.Clone()
	wantServers, wantTools := v.Servers(), v.Tools()

	c.Apply(r.add(&events.Disconnected{Server: "a", Reason: events.ReasonRequested}))
	if diff := cmp.Diff(wantServers, v.Servers()); diff != "" {
		t.Errorf("applying to the clone changed the original (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantTools, v.Tools()); diff != "" {
		t.Errorf("applying to the clone changed the original's tools (-want +got):\n%s", diff)
	}
	if c.Status("a") != StatusDisconnected || len(c.Tools()) != 0 {
		t.Errorf("clone: status %q, %d tools; want disconnected, 0", c.Status("a"), len(c.Tools()))
	}
	s, _ := v.Server("a")
	s.Config.Args[0] = "changed"
	if s2, _ := v.Server("a"); s2.Config.Args[0] != "x" {
		t.Error("modifying a returned ServerState changed the view")
	}
}

// TestToolViewReplayIsDeterministic replays a recorded session twice, once
// querying after every event as a live session would, and compares.
func TestToolViewReplayIsDeterministic(t *testing.T) {
	envs := realisticSession("live", 8, 12, 3000)
	live := NewToolView("live")
	var versions []uint64
	for _, env := range envs {
		before := live.Version()
		live.Apply(env)
		if live.Version() != before {
			versions = append(versions, live.Version())
			_ = live.Tools()
		}
	}
	replay := NewToolView("live")
	for _, env := range envs {
		replay.Apply(env)
	}
	if diff := cmp.Diff(live.Servers(), replay.Servers()); diff != "" {
		t.Errorf("servers differ between live and replay (-live +replay):\n%s", diff)
	}
	if diff := cmp.Diff(live.Tools(), replay.Tools()); diff != "" {
		t.Errorf("tools differ between live and replay (-live +replay):\n%s", diff)
	}
	if live.Version() != replay.Version() || live.Counts() != replay.Counts() {
		t.Errorf("version/counts differ: live %d %+v, replay %d %+v", live.Version(), live.Counts(), replay.Version(), replay.Counts())
	}
	if len(versions) == 0 {
		t.Fatal("the session never changed the view")
	}
	// Spot checks of the recorded story.
	if got := replay.Status("srv-01"); got != StatusDisconnected {
		t.Errorf("srv-01 (timed out) = %q, want disconnected", got)
	}
	if s, _ := replay.Server("srv-02"); s.Deferred || s.Status != StatusConnected || len(s.Tools) != 12 {
		t.Errorf("srv-02 (late) = %s deferred=%v tools=%d; want connected, live, 12 tools", s.Status, s.Deferred, len(s.Tools))
	}
	if s, _ := replay.Server("srv-04"); len(s.Tools) != 11 || len(s.Hidden) != 1 {
		t.Errorf("srv-04 (filtered) = %d tools, %v hidden; want 11 and 1", len(s.Tools), s.Hidden)
	}
	if c := replay.Counts(); c.Unknown == 0 || c.Undecodable != 0 {
		t.Errorf("counts = %+v, want some unknown and no undecodable", c)
	}
}

func TestToolViewListForUnknownServerIgnored(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	v.Apply(r.add(listed("ghost", defs("g", 2))))
	v.Apply(r.add(&events.CachedToolsServed{Server: "ghost", Tools: defs("g", 2)}))
	if len(v.Servers()) != 0 || len(v.Tools()) != 0 || v.Version() != 0 {
		t.Errorf("out-of-order lists created state: servers %v, tools %v, version %d", v.Servers(), v.Tools(), v.Version())
	}
}
