package projector

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
