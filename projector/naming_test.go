package projector

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
)

// wantHash is the suffix hash computed independently of the code under test.
func wantHash(server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:])[:8]
}

var validName = regexp.MustCompile(`^mcp_[a-z0-9]+(_[a-z0-9]+)+$`)

func TestToolName(t *testing.T) {
	long := strings.Repeat("Very Long Tool Name ", 10) // 200 characters
	tests := []struct {
		name         string
		server, tool string
		want         string
	}{
		{"plain", "git", "status", "mcp_git_status"},
		{"uppercase", "GitHub", "CreateIssue", "mcp_github_createissue"},
		{"digits kept", "s3", "put_v2", "mcp_s3_put_v2"},
		{"runs collapse", "my--server", "read  file!!now", "mcp_my_server_read_file_now"},
		{"edges trimmed", "__srv__", "--tool--", "mcp_srv_tool"},
		{"spaces", "my server", "do it", "mcp_my_server_do_it"},
		{"colon and dot", "plugin:fs.v1", "read.file", "mcp_plugin_fs_v1_read_file"},
		{"unicode is outside a-z0-9", "Café", "naïve☕tool", "mcp_caf_na_ve_tool"},
		{"only unicode falls back", "日本", "ツール", "mcp_server_tool"},
		{"empty parts", "", "", "mcp_server_tool"},
		{"empty server", "", "list", "mcp_server_list"},
		{"punctuation only tool", "git", "!!!", "mcp_git_tool"},
		{"double prefix stripped", "puppeteer", "puppeteer_screenshot", "mcp_puppeteer_screenshot"},
		{"double prefix after sanitising", "My-Server", "my_server_x", "mcp_my_server_x"},
		{"double prefix case", "git", "GIT-log", "mcp_git_log"},
		{"tool equal to server", "git", "git", "mcp_git_git"},
		{"prefix without separator", "git", "github_sync", "mcp_git_github_sync"},
		{"exactly 64", "s", strings.Repeat("a", 58), "mcp_s_" + strings.Repeat("a", 58)},
		{"65 is cut", "s", strings.Repeat("a", 59), "mcp_s_" + strings.Repeat("a", 49) + "_" + wantHash("s", strings.Repeat("a", 59))},
		{"200 chars", "server", long, ("mcp_server_" + strings.TrimSuffix(strings.Repeat("very_long_tool_name_", 3), "_"))[:55] + "_" + wantHash("server", long)},
		{"cut before separator trims it", "s", strings.Repeat("a", 48) + "-b" + strings.Repeat("c", 20), "mcp_s_" + strings.Repeat("a", 48) + "_" + wantHash("s", strings.Repeat("a", 48)+"-b"+strings.Repeat("c", 20))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ToolName(tt.server, tt.tool)
			if got != tt.want {
				t.Errorf("ToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
			}
			if len(got) > MaxToolNameLen {
				t.Errorf("ToolName(%q, %q) has %d characters, more than %d", tt.server, tt.tool, len(got), MaxToolNameLen)
			}
			if !validName.MatchString(got) {
				t.Errorf("ToolName(%q, %q) = %q, not of the form mcp_[a-z0-9_]", tt.server, tt.tool, got)
			}
		})
	}
}

func TestToolNameLongIsStableAndDistinct(t *testing.T) {
	a := strings.Repeat("x", 120) + "alpha"
	b := strings.Repeat("x", 120) + "beta"
	na, nb := ToolName("srv", a), ToolName("srv", b)
	if na == nb {
		t.Fatalf("long names sharing a prefix collide: %q", na)
	}
	if again := ToolName("srv", a); again != na {
		t.Errorf("ToolName not stable: %q then %q", na, again)
	}
	// The hash covers the original pair, not the sanitised one.
	if ToolName("srv", strings.ToUpper(a)) == na {
		t.Errorf("pairs differing only in case got the same long name %q", na)
	}
}

func TestToolNameProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abcXYZ019_-. :/é☕日\x00")
	randStr := func(n int) string {
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(rs)
	}
	for range 2000 {
		s, tl := randStr(rng.IntN(40)), randStr(rng.IntN(150))
		got := ToolName(s, tl)
		if len(got) > MaxToolNameLen || !validName.MatchString(got) {
			t.Fatalf("ToolName(%q, %q) = %q: invalid", s, tl, got)
		}
	}
}

func TestAssignNames(t *testing.T) {
	// All three sanitise to mcp_a_b_c; ("A", "b c") is the smallest.
	refs := []ToolRef{{"a-b", "c"}, {"a", "b_c"}, {"A", "b c"}, {"git", "status"}}
	names, collisions := AssignNames(refs)
	want := map[ToolRef]string{
		{"A", "b c"}:      "mcp_a_b_c",
		{"a", "b_c"}:      "mcp_a_b_c_" + wantHash("a", "b_c"),
		{"a-b", "c"}:      "mcp_a_b_c_" + wantHash("a-b", "c"),
		{"git", "status"}: "mcp_git_status",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("names mismatch (-want +got):\n%s", diff)
	}
	wantCollisions := []Collision{
		{Name: "mcp_a_b_c", Kept: ToolRef{"A", "b c"}, Ref: ToolRef{"a", "b_c"}, Assigned: want[ToolRef{"a", "b_c"}]},
		{Name: "mcp_a_b_c", Kept: ToolRef{"A", "b c"}, Ref: ToolRef{"a-b", "c"}, Assigned: want[ToolRef{"a-b", "c"}]},
	}
	if diff := cmp.Diff(wantCollisions, collisions); diff != "" {
		t.Errorf("collisions mismatch (-want +got):\n%s", diff)
	}
}

func TestAssignNamesSuffixTakenByAnotherBase(t *testing.T) {
	// ("a-", "b") loses mcp_a_b to ("a", "b"); its first candidate
	// mcp_a_b_<hash> is the own name of a third tool, so it takes the next.
	h := wantHash("a-", "b")
	refs := []ToolRef{{"a", "b"}, {"a-", "b"}, {"a", "b_" + h}}
	names, collisions := AssignNames(refs)
	if got := names[ToolRef{"a", "b_" + h}]; got != "mcp_a_b_"+h {
		t.Errorf("third tool = %q, want its own name mcp_a_b_%s", got, h)
	}
	got := names[ToolRef{"a-", "b"}]
	if want := "mcp_a_b_" + pairHash("a-", "b", 1); got != want {
		t.Errorf("renamed tool = %q, want %q", got, want)
	}
	if len(collisions) != 1 || collisions[0].Assigned != got {
		t.Errorf("collisions = %+v, want one for the renamed tool", collisions)
	}
}

func TestAssignNamesLongCollision(t *testing.T) {
	// Long names that agree up to the cut and in the hash input cannot be
	// produced without breaking SHA-256, but two long refs whose readable
	// forms agree must still get distinct names.
	tail := strings.Repeat("y", 100)
	refs := []ToolRef{{"srv", "Tool " + tail}, {"srv", "tool_" + tail}, {"SRV", "tool " + tail}}
	names, _ := AssignNames(refs)
	seen := map[string]ToolRef{}
	for r, n := range names {
		if len(n) > MaxToolNameLen {
			t.Errorf("%v: %q longer than %d", r, n, MaxToolNameLen)
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("%v and %v share %q", prev, r, n)
		}
		seen[n] = r
	}
}

// TestAssignNamesOrderIndependent shuffles many colliding sets and checks
// that names and collisions depend only on the set.
func TestAssignNamesOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	servers := []string{"a", "A", "a-", "a_b", "a b", "fs", "FS", "f.s", strings.Repeat("s", 40)}
	tools := []string{"b", "B", "b_c", "c", "read", "Read", "fs_read", strings.Repeat("t", 30), strings.Repeat("t", 30) + "!", "x y"}
	for round := range 200 {
		var set []ToolRef
		for _, s := range servers {
			for _, tl := range tools {
				if rng.IntN(3) == 0 {
					set = append(set, ToolRef{s, tl})
				}
			}
		}
		wantNames, wantCollisions := AssignNames(set)
		checkUnique(t, wantNames)
		for range 5 {
			shuffled := append([]ToolRef(nil), set...)
			// Duplicates must not change anything either.
			if len(shuffled) > 0 {
				shuffled = append(shuffled, shuffled[rng.IntN(len(shuffled))])
			}
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			gotNames, gotCollisions := AssignNames(shuffled)
			if diff := cmp.Diff(wantNames, gotNames); diff != "" {
				t.Fatalf("round %d: names depend on order (-want +got):\n%s", round, diff)
			}
			if diff := cmp.Diff(wantCollisions, gotCollisions); diff != "" {
				t.Fatalf("round %d: collisions depend on order (-want +got):\n%s", round, diff)
			}
		}
	}
}

func checkUnique(t *testing.T, names map[ToolRef]string) {
	t.Helper()
	seen := make(map[string]ToolRef, len(names))
	for r, n := range names {
		if len(n) > MaxToolNameLen || !validName.MatchString(n) {
			t.Errorf("%v: invalid name %q", r, n)
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("%v and %v share %q", prev, r, n)
		}
		seen[n] = r
	}
}

// TestToolViewNamesKeepTheirTool folds event sequences and checks what
// each exposed name means at the end: a name the session gave out keeps
// meaning its tool, however later servers' names sort, while its server is
// away and after it is back; a newcomer that collides gets the suffix.
func TestToolViewNamesKeepTheirTool(t *testing.T) {
	connect := func(server string) []events.Event {
		return []events.Event{&events.ConnectStarted{Server: server, Attempt: 1}, &events.ServerConnected{Server: server}}
	}
	list := func(server string, tools ...string) events.Event {
		ds := make([]events.ToolDef, len(tools))
		for i, n := range tools {
			ds[i] = events.ToolDef{Name: n}
		}
		return listed(server, ds)
	}
	seq := func(parts ...any) []events.Event {
		var out []events.Event
		for _, p := range parts {
			switch p := p.(type) {
			case events.Event:
				out = append(out, p)
			case []events.Event:
				out = append(out, p...)
			}
		}
		return out
	}
	mine, newcomer := ToolRef{"my_server", "echo"}, ToolRef{"My", "server_echo"}
	suffixed := "mcp_my_server_echo_" + wantHash("My", "server_echo")
	mineSuffixed := "mcp_my_server_echo_" + wantHash("my_server", "echo")
	tests := []struct {
		name   string
		events []events.Event
		want   map[string]ToolRef // name → tool; a zero ToolRef: the name means nothing now
	}{
		{
			name:   "the first to list keeps the name",
			events: seq(connect("my_server"), list("my_server", "echo"), connect("My"), list("My", "other"), list("My", "other", "server_echo")),
			want:   map[string]ToolRef{"mcp_my_server_echo": mine, suffixed: newcomer, "mcp_my_other": {"My", "other"}},
		},
		{
			name:   "with no earlier claim the set decides",
			events: seq(connect("My"), list("My", "server_echo"), connect("my_server"), list("my_server", "echo")),
			want:   map[string]ToolRef{"mcp_my_server_echo": newcomer, mineSuffixed: mine},
		},
		{
			name:   "one list with colliding tools: the smallest keeps it",
			events: seq(connect("s"), list("s", "foo_bar", "Foo-Bar")),
			want:   map[string]ToolRef{"mcp_s_foo_bar": {"s", "Foo-Bar"}, "mcp_s_foo_bar_" + wantHash("s", "foo_bar"): {"s", "foo_bar"}},
		},
		{
			name: "while its server is disconnected the name means nothing",
			events: seq(connect("my_server"), list("my_server", "echo"),
				&events.Disconnected{Server: "my_server", Reason: events.ReasonRequested},
				connect("My"), list("My", "server_echo")),
			want: map[string]ToolRef{"mcp_my_server_echo": {}, suffixed: newcomer},
		},
		{
			name: "after its server came back",
			events: seq(connect("my_server"), list("my_server", "echo"),
				&events.Disconnected{Server: "my_server", Reason: events.ReasonRequested},
				connect("My"), list("My", "server_echo"),
				connect("my_server"), list("my_server", "echo")),
			want: map[string]ToolRef{"mcp_my_server_echo": mine, suffixed: newcomer},
		},
		{
			name: "while its server reconnects",
			events: seq(connect("my_server"), list("my_server", "echo"),
				&events.Disconnected{Server: "my_server", Reason: events.ReasonProcessExited, Reconnecting: true},
				connect("My"), list("My", "server_echo")),
			want: map[string]ToolRef{"mcp_my_server_echo": mine, suffixed: newcomer},
		},
		{
			name: "after the server stopped listing the tool",
			events: seq(connect("my_server"), list("my_server", "echo"), list("my_server", "other"),
				connect("My"), list("My", "server_echo"), list("my_server", "other", "echo")),
			want: map[string]ToolRef{"mcp_my_server_echo": mine, suffixed: newcomer},
		},
		{
			name: "served from the cache counts as exposed",
			events: seq(&events.ConnectStarted{Server: "my_server", Attempt: 1},
				&events.CachedToolsServed{Server: "my_server", Tools: []events.ToolDef{{Name: "echo"}}},
				connect("My"), list("My", "server_echo"),
				&events.ServerConnected{Server: "my_server"}, list("my_server", "echo")),
			want: map[string]ToolRef{"mcp_my_server_echo": mine, suffixed: newcomer},
		},
		{
			name: "hidden by a filter, then shown again",
			events: seq(connect("my_server"), list("my_server", "echo"),
				discovered("my_server", events.ServerConfig{Command: "x", DisabledTools: []string{"echo"}}),
				connect("My"), list("My", "server_echo"),
				discovered("my_server", events.ServerConfig{Command: "x"})),
			want: map[string]ToolRef{"mcp_my_server_echo": mine, suffixed: newcomer},
		},
		{
			name: "a newcomer's suffixed name is taken too",
			events: seq(connect("my_server"), list("my_server", "echo"), connect("My"), list("My", "server_echo"),
				connect("x"), list("x", "y"), connect("my"), list("my", "server_echo_"+wantHash("My", "server_echo"))),
			want: map[string]ToolRef{suffixed: newcomer,
				suffixed + "_" + wantHash("my", "server_echo_"+wantHash("My", "server_echo")): {"my", "server_echo_" + wantHash("My", "server_echo")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder("s1", 0)
			live := NewToolView("s1")
			for _, ev := range tt.events {
				live.Apply(r.add(ev))
				live.Tools() // a live session looks at its tools after every change
			}
			replay := NewToolView("s1")
			for _, env := range r.envs {
				replay.Apply(env)
			}
			for _, v := range []*ToolView{live, replay} {
				for name, want := range tt.want {
					got, ok := v.Resolve(name)
					if want == (ToolRef{}) {
						if ok {
							t.Errorf("%s means %v, want nothing", name, got)
						}
						continue
					}
					if !ok || got != want {
						t.Errorf("%s means %v (%v), want %v", name, got, ok, want)
					}
				}
				checkUnique(t, toolNameMap(v.Tools()))
			}
			if diff := cmp.Diff(replay.Tools(), live.Tools()); diff != "" {
				t.Errorf("replay differs from live (-replay +live):\n%s", diff)
			}
		})
	}
}

func toolNameMap(tools []Tool) map[ToolRef]string {
	out := make(map[ToolRef]string, len(tools))
	for _, t := range tools {
		out[ToolRef{t.Server, t.Original}] = t.Name
	}
	return out
}

// TestNameClaimsForget checks that a view that gave out very many names
// forgets those of tools it no longer exposes, and keeps the others.
func TestNameClaimsForget(t *testing.T) {
	v := NewToolView("s1")
	v.applyEvent(t0, &events.ConnectStarted{Server: "s", Attempt: 1})
	v.applyEvent(t0, &events.ServerConnected{Server: "s"})
	keep := events.ToolDef{Name: "keep"}
	v.applyEvent(t0, &events.ToolsListed{Server: "s", Tools: []events.ToolDef{keep}})
	for round := range 3 {
		ds := make([]events.ToolDef, MaxNameClaims/2, MaxNameClaims/2+1)
		for i := range ds {
			ds[i] = events.ToolDef{Name: fmt.Sprintf("r%d_%d", round, i)}
		}
		v.applyEvent(t0, &events.ToolsListed{Server: "s", Tools: append(ds, keep)})
	}
	if n, most := v.names.Len(), MaxNameClaims+MaxNameClaims/2+1; n > most {
		t.Errorf("%d names held, more than %d", n, most)
	}
	if ref, ok := v.Resolve("mcp_s_keep"); !ok || ref != (ToolRef{"s", "keep"}) {
		t.Errorf("mcp_s_keep = %v, %v", ref, ok)
	}
	if ref, ok := v.Resolve("mcp_s_r2_0"); !ok || ref != (ToolRef{"s", "r2_0"}) {
		t.Errorf("mcp_s_r2_0 = %v, %v", ref, ok)
	}
}

// TestNameClaimsForgetSparesOtherServers: a server that renames its
// tools until the view gave out more than MaxNameClaims names forgets its
// own old names only. Another server's tool, away meanwhile (its server
// disconnected), keeps its name: a newcomer colliding with it gets the
// suffix, and the name means the tool again once its server is back.
func TestNameClaimsForgetSparesOtherServers(t *testing.T) {
	v := NewToolView("s1")
	for _, s := range []string{"my_server", "My"} {
		v.applyEvent(t0, &events.ConnectStarted{Server: s, Attempt: 1})
		v.applyEvent(t0, &events.ServerConnected{Server: s})
	}
	echo := []events.ToolDef{{Name: "echo"}}
	v.applyEvent(t0, &events.ToolsListed{Server: "my_server", Tools: echo})
	v.applyEvent(t0, &events.Disconnected{Server: "my_server", Reason: events.ReasonRequested})
	for round := range 3 {
		ds := make([]events.ToolDef, MaxNameClaims/2)
		for i := range ds {
			ds[i] = events.ToolDef{Name: fmt.Sprintf("r%d_%d", round, i)}
		}
		v.applyEvent(t0, &events.ToolsListed{Server: "My", Tools: ds})
	}
	v.applyEvent(t0, &events.ToolsListed{Server: "My", Tools: []events.ToolDef{{Name: "server_echo"}}})
	if n, most := v.names.Len(), MaxNameClaims+2; n > most {
		t.Errorf("%d names held, more than %d", n, most)
	}
	suffixed := "mcp_my_server_echo_" + wantHash("My", "server_echo")
	if ref, ok := v.Resolve(suffixed); !ok || ref != (ToolRef{"My", "server_echo"}) {
		t.Errorf("%s = %v, %v; want the newcomer's tool", suffixed, ref, ok)
	}
	v.applyEvent(t0, &events.ConnectStarted{Server: "my_server", Attempt: 2})
	v.applyEvent(t0, &events.ServerConnected{Server: "my_server"})
	v.applyEvent(t0, &events.ToolsListed{Server: "my_server", Tools: echo})
	if ref, ok := v.Resolve("mcp_my_server_echo"); !ok || ref != (ToolRef{"my_server", "echo"}) {
		t.Errorf("mcp_my_server_echo = %v, %v; want my_server's echo", ref, ok)
	}
}

// TestNameClaimsClone: a clone shares the names given so far, and a name
// given by one copy afterwards is not in the other.
func TestNameClaimsClone(t *testing.T) {
	var a NameClaims
	a.Claim([]ToolRef{{"s", "x"}})
	b := a.Clone()
	a.Claim([]ToolRef{{"s", "y"}, {"S", "x"}})
	b.Claim([]ToolRef{{"S", "x"}, {"s", "z"}})
	for _, c := range []struct {
		c    *NameClaims
		ref  ToolRef
		want string
	}{
		{&a, ToolRef{"s", "x"}, "mcp_s_x"}, {&b, ToolRef{"s", "x"}, "mcp_s_x"},
		{&a, ToolRef{"s", "y"}, "mcp_s_y"}, {&b, ToolRef{"s", "y"}, ""},
		{&a, ToolRef{"S", "x"}, "mcp_s_x_" + wantHash("S", "x")}, {&b, ToolRef{"S", "x"}, "mcp_s_x_" + wantHash("S", "x")},
		{&a, ToolRef{"s", "z"}, ""}, {&b, ToolRef{"s", "z"}, "mcp_s_z"},
	} {
		if got, _ := c.c.Name(c.ref); got != c.want {
			t.Errorf("%p: %v named %q, want %q", c.c, c.ref, got, c.want)
		}
	}
}
