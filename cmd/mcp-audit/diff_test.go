package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

// The two versions of a fixture server the diff tests record: v2 changes
// echo's schema and annotations, widens lookup, removes gone, adds added,
// makes greet's argument required and drops a resource.
var (
	contractV1 = []string{
		"only=",
		`tool-def={"name":"echo","description":"Echo v1.","inputSchema":{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"number"}},"required":["text"]},"annotations":{"readOnlyHint":true}}`,
		`tool-def={"name":"lookup","inputSchema":{"type":"object","properties":{"mode":{"type":"string","enum":["fast","slow"]}}}}`,
		`tool-def={"name":"gone","inputSchema":{"type":"object"}}`,
		`prompt-def={"name":"greet","arguments":[{"name":"who"}]}`,
		"resources=2",
	}
	contractV2 = []string{
		"only=",
		`tool-def={"name":"echo","description":"Echo v2.","inputSchema":{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"},"lang":{"type":"string"}},"required":["text","lang"]}}`,
		`tool-def={"name":"lookup","inputSchema":{"type":"object","properties":{"mode":{"type":"string","enum":["fast","slow","exact"]},"limit":{"type":"integer"}}}}`,
		`tool-def={"name":"added","inputSchema":{"type":"object"}}`,
		`prompt-def={"name":"greet","arguments":[{"name":"who","required":true}]}`,
		"resources=1",
	}
	// contractWidened only relaxes v1: nothing in it is breaking.
	contractWidened = []string{
		"only=",
		`tool-def={"name":"echo","description":"Echo, better described.","inputSchema":{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"number"},"lang":{"type":"string"}},"required":["text"]},"annotations":{"readOnlyHint":true}}`,
		`tool-def={"name":"lookup","inputSchema":{"type":"object","properties":{"mode":{"type":"string","enum":["fast","slow","exact"]}}}}`,
		`tool-def={"name":"gone","inputSchema":{"type":"object"}}`,
		`tool-def={"name":"extra","inputSchema":{"type":"object"}}`,
		`prompt-def={"name":"greet","arguments":[{"name":"who"}]}`,
		"resources=2",
	}
)

// recordSession runs one session of a fixture server "fx" of these
// behaviours, and a server "stable" that never changes, into db; it
// returns the session id.
func recordSession(t *testing.T, db string, behaviours []string) string {
	t.Helper()
	cfg := writeConfig(t, map[string][]string{"fx": behaviours, "stable": {"only=echo"}})
	code, out, errOut := runCmd(t, "--db", db, "--json", "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--no-project-config", "--config", cfg)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	var got struct{ Session string }
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Session == "" {
		t.Fatalf("run output %q: %v", out, err)
	}
	return got.Session
}

// golden compares got with testdata/NAME, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s: mismatch (-want +got):\n%s", path, diff)
	}
}

var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// placeholders replaces the session ids with names and times with TIME.
func placeholders(s string, ids map[string]string) string {
	for id, name := range ids {
		s = strings.ReplaceAll(s, id, name)
	}
	return rfc3339.ReplaceAllString(s, "TIME")
}

// diff of two recorded sessions whose server changed its listing: every
// change named by its JSON pointer and class, text and JSON, and the exit
// status with and without --fail-on breaking.
func TestDiffSessions(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "e.db")
	a := recordSession(t, db, contractV1)
	b := recordSession(t, db, contractV2)
	ids := map[string]string{a: "SESSION_A", b: "SESSION_B"}

	code, out, errOut := runCmd(t, "--db", db, "diff", "last~1", "last")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "diff.txt", placeholders(out, ids))

	code, out, errOut = runCmd(t, "--db", db, "--json", "diff", a, b, "--fail-on", "breaking")
	if code != exitCheck {
		t.Errorf("--fail-on breaking: exit %d, want 1\n%s", code, errOut)
	}
	golden(t, "diff.json", placeholders(out, ids))
	var got diffJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Breaking == 0 || got.Total <= got.Breaking {
		t.Errorf("breaking %d of %d", got.Breaking, got.Total)
	}

	// Only one server: stable has no change at all.
	code, out, _ = runCmd(t, "--db", db, "diff", a, b, "--server", "stable", "--fail-on", "breaking")
	if code != 0 || !strings.Contains(out, "unchanged: stable") || !strings.HasSuffix(out, "no changes\n") {
		t.Errorf("--server stable: exit %d\n%s", code, out)
	}
	// The same session twice: nothing changed.
	if code, out, _ := runCmd(t, "--db", db, "diff", "last", "last", "--fail-on", "breaking"); code != 0 || !strings.HasSuffix(out, "no changes\n") {
		t.Errorf("same session: exit %d\n%s", code, out)
	}
}

// A change that only widens the contract passes --fail-on breaking.
func TestDiffNonBreakingPasses(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "e.db")
	a := recordSession(t, db, contractV1)
	b := recordSession(t, db, contractWidened)
	code, out, errOut := runCmd(t, "--db", db, "diff", "last~1", "last", "--fail-on", "breaking")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "diff-nonbreaking.txt", placeholders(out, map[string]string{a: "SESSION_A", b: "SESSION_B"}))
}

// diff --server NAME: the history of one server across sessions, each
// pair of distinct listings once.
func TestDiffHistory(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "e.db")
	s1 := recordSession(t, db, contractV1)
	s2 := recordSession(t, db, contractV1) // the same listing: no step
	s3 := recordSession(t, db, contractWidened)
	s4 := recordSession(t, db, contractV2)
	ids := map[string]string{s1: "SESSION_1", s2: "SESSION_2", s3: "SESSION_3", s4: "SESSION_4"}

	code, out, errOut := runCmd(t, "--db", db, "diff", "--server", "fx")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "diff-history.txt", placeholders(out, ids))

	code, out, _ = runCmd(t, "--db", db, "--json", "diff", "--server", "fx", "--since", "2000-01-01", "--fail-on", "breaking")
	if code != exitCheck {
		t.Errorf("--fail-on breaking: exit %d, want 1", code)
	}
	var got historyJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Steps) != 2 || got.Steps[0].From.Session != s2 || got.Steps[0].To.Session != s3 || got.Steps[0].Breaking != 0 ||
		got.Steps[1].To.Session != s4 || got.Steps[1].Breaking == 0 || got.Steps[1].To.Seq <= got.Steps[0].To.Seq {
		t.Errorf("steps %+v", got.Steps)
	}
	// Since now: the newest listing is the baseline, nothing changed after.
	code, out, _ = runCmd(t, "--db", db, "diff", "--server", "fx", "--since", "0s", "--fail-on", "breaking")
	if code != 0 || !strings.Contains(out, ": 0 change(s)") {
		t.Errorf("--since 0s: exit %d\n%s", code, out)
	}
	if code, _, _ := runCmd(t, "--db", db, "diff", "--server", "stable", "--fail-on", "breaking"); code != 0 {
		t.Errorf("stable history: exit %d", code)
	}
}

func TestDiffUsageErrors(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "e.db")
	recordSession(t, db, []string{"only=echo"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"diff"}, "usage: mcp-audit diff A B"},
		{[]string{"diff", "last"}, "usage: mcp-audit diff A B"},
		{[]string{"diff", "last", "last", "--fail-on", "warnings"}, `--fail-on "warnings"`},
		{[]string{"diff", "last", "last", "--since", "1h"}, "--since needs --server"},
		{[]string{"diff", "last~5", "last"}, `session "last~5": only 1 session(s) recorded`},
		{[]string{"diff", "last~x", "last"}, `want last~N`},
		{[]string{"diff", "nope", "last"}, `no session "nope"`},
		{[]string{"diff", "--server", "fx", "--since", "yesterday"}, `--since "yesterday"`},
		{[]string{"diff", "--server", "nobody"}, `server "nobody" is in no recorded session`},
		{[]string{"diff", "last", "last", "--server", "nobody"}, `server "nobody" listed nothing`},
	} {
		code, _, errOut := runCmd(t, append([]string{"--db", db}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	for _, cmd := range []string{"diff", "export"} {
		if code, out, _ := runCmd(t, cmd, "--help"); code != 0 || !strings.Contains(out, "usage: mcp-audit "+cmd) || !strings.Contains(out, "examples:") {
			t.Errorf("%s --help: exit %d\n%s", cmd, code, out)
		}
	}
}
