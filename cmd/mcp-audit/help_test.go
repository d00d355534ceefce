package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// Every visible command, and each subcommand of auth, answers --help, -h
// and `help CMD` on stdout with exit 0: its usage line, its flags in the
// double-dash form with their defaults, and an example.
func TestEveryCommandAnswersHelp(t *testing.T) {
	var lines [][]string
	for _, name := range commandNames() {
		if name != "help" {
			lines = append(lines, []string{name})
		}
	}
	for _, sub := range authSubcommands {
		lines = append(lines, []string{"auth", sub})
	}
	for _, cmd := range lines {
		name := strings.Join(cmd, " ")
		h, ok := helps[name]
		if !ok || h.usage == "" || h.about == "" || len(h.examples) == 0 {
			t.Errorf("%s: no help text (usage, about, examples)", name)
			continue
		}
		var outs []string
		for _, args := range [][]string{append(cmd, "--help"), append(cmd, "-h"), append([]string{"help"}, cmd...)} {
			code, out, errOut := runCmd(t, args...)
			if code != 0 || errOut != "" {
				t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
			}
			outs = append(outs, out)
		}
		if outs[0] != outs[1] || outs[0] != outs[2] {
			t.Errorf("%s: --help, -h and help %s differ:\n%s\n---\n%s\n---\n%s", name, name, outs[0], outs[1], outs[2])
		}
		out := outs[0]
		for _, want := range []string{"usage: mcp-audit " + h.usage + "\n", "examples:\n  mcp-audit ", "--db PATH", "--json"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help lacks %q:\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "\n  -db") || strings.Contains(out, "\n  -json") {
			t.Errorf("%s --help shows single-dash flags:\n%s", name, out)
		}
	}
}

func TestRunHelpListsItsFlagsWithDefaults(t *testing.T) {
	code, out, _ := runCmd(t, "run", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"--gate DURATION", "(default 250ms)", "--settle DURATION", "(default 30s)", "--cwd DIR", "--config FILE",
		"--call SERVER/TOOL", "mcp_SERVER_TOOL", "--strict", "--once", "--watch-config=false turns it off", "--tool-budget TOKENS", "(default 20000)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q:\n%s", want, out)
		}
	}
	// A flag set after the arguments still asks for help.
	if code, out2, _ := runCmd(t, "inspect", "last", "--help"); code != 0 || !strings.Contains(out2, "--at TIME") || !strings.Contains(out2, "--seq N") {
		t.Errorf("inspect last --help: %d\n%s", code, out2)
	}
}

func TestAuthHelpAndUnknownSubcommand(t *testing.T) {
	code, out, errOut := runCmd(t, "auth", "--help")
	if code != 0 || !strings.Contains(out, "usage: mcp-audit auth login SERVER | status | logout SERVER") || errOut != "" {
		t.Errorf("auth --help: %d %q %q", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "auth", "logn", "x")
	if code != 2 || !strings.Contains(errOut, `unknown subcommand "logn" (did you mean login?)`) {
		t.Errorf("auth logn: %d %q", code, errOut)
	}
}

func TestTypoGetsDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rnu"}, `unknown command "rnu" (did you mean run?)`},
		{[]string{"sesions"}, `unknown command "sesions" (did you mean sessions?)`},
		{[]string{"inpsect"}, `(did you mean inspect?)`},
		{[]string{"run", "--gatee", "1s"}, "unknown flag --gatee (did you mean --gate?); see mcp-audit run --help"},
		{[]string{"discover", "--no-project-conf"}, "(did you mean --no-project-config?)"},
		{[]string{"replay", "last", "--folow"}, "(did you mean --follow?)"},
		{[]string{"--jsno", "sessions"}, "unknown flag --jsno (did you mean --json?); see mcp-audit --help"},
	} {
		if c.want == "" {
			continue
		}
		code, out, errOut := runCmd(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	if code, _, errOut := runCmd(t, "zzzzzz"); code != 2 || strings.Contains(errOut, "did you mean") {
		t.Errorf("a name close to nothing gets no suggestion: %d %q", code, errOut)
	}
}

func TestBadFlagValuesNameTheFlagAndAnExample(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--gate", "1sec"}, `mcp-audit: --gate: invalid duration "1sec" (e.g. 250ms, 5s)`},
		{[]string{"run", "--settle=soon"}, `mcp-audit: --settle: invalid duration "soon" (e.g. 250ms, 5s)`},
		{[]string{"search", "q", "--limit", "ten"}, `mcp-audit: --limit: invalid number "ten" (e.g. 10)`},
		{[]string{"inspect", "last", "--seq", "-1"}, `mcp-audit: --seq: invalid number "-1"`},
		{[]string{"run", "--gate"}, `mcp-audit: --gate needs a value (e.g. 250ms, 5s)`},
		{[]string{"run", "--once=maybe"}, `mcp-audit: --once: invalid boolean "maybe"`},
	} {
		code, _, errOut := runCmd(t, c.args...)
		if code != 2 || !strings.HasPrefix(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", c.args, code, errOut, c.want)
		}
		if strings.Contains(errOut, " -gate") || strings.Contains(errOut, "parse error") {
			t.Errorf("%q: %q", c.args, errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errOut := runCmd(t, args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "mcp-audit ") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("%q: %d %q %q", args, code, out, errOut)
		}
	}
	code, out, _ := runCmd(t, "--json", "version")
	var v versionJSON
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || v.Go != runtime.Version() {
		t.Errorf("version --json: %d %s", code, out)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"run", "replay", "sessions", "search", "verify"}
	for in, want := range map[string]string{
		"rnu": "run", "ru": "run", "replya": "replay", "sesion": "sessions", "sear": "search", "xyz": "", "verfiy": "verify", "s": "",
	} {
		if got := suggest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
