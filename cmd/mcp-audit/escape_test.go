package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// hostile holds what a server could send to take over a terminal: an OSC
// that sets the window title (ended by BEL), an erase-screen CSI, the C1
// CSI both as a stray byte and as UTF-8, a right-to-left override, DEL, a
// carriage return and a stray C1 NEL byte.
const hostile = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u009b2J\u202eevil\x7f\r\x85end"

// terminalUnsafe reports the first character of s a terminal could act on:
// a control character other than newline (and tab when allowTab), DEL, a
// C1 control, a bidirectional override or isolate, or a byte that is not
// UTF-8 (8-bit terminals read 0x80–0x9F as C1).
func terminalUnsafe(s string, allowTab bool) (at int, what string, found bool) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return i, fmt.Sprintf("byte %#x", s[i]), true
		case r == '\n', r == '\t' && allowTab:
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, isBidiControl(r):
			return i, fmt.Sprintf("%U", r), true
		}
		i += size
	}
	return 0, "", false
}

func checkTerminalSafe(t *testing.T, what, out string, allowTab bool) {
	t.Helper()
	if at, c, found := terminalUnsafe(out, allowTab); found {
		t.Errorf("%s prints %s raw at %d: %q", what, c, at, out[max(0, at-40):min(len(out), at+40)])
	}
}

func TestEscapeLineAndText(t *testing.T) {
	for _, c := range []struct{ in, line, text string }{
		{"plain ü 名 ✓", "plain ü 名 ✓", "plain ü 名 ✓"},
		{"C:\\path\\file", "C:\\path\\file", "C:\\path\\file"},
		{"a\tb\nc\r", `a\tb\nc\r`, "a\tb\nc\\r"},
		{"\x1b]0;t\x07\x1b[2J", `\x1b]0;t\x07\x1b[2J`, `\x1b]0;t\x07\x1b[2J`},
		{"\x00\x7f", `\x00\x7f`, `\x00\x7f`},
		{"\u0085\u009b\u009f\u00a0", `\u0085\u009b\u009f` + "\u00a0", `\u0085\u009b\u009f` + "\u00a0"},
		{"\x9b\xff\xc3", `\x9b\xff\xc3`, `\x9b\xff\xc3`},
		{"\u202a\u202e\u2066\u2069\u200d", `\u202a\u202e\u2066\u2069` + "\u200d", `\u202a\u202e\u2066\u2069` + "\u200d"},
		{"\ufffd", "\ufffd", "\ufffd"},
	} {
		if got := escapeLine(c.in); got != c.line {
			t.Errorf("escapeLine(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := escapeText(c.in); got != c.text {
			t.Errorf("escapeText(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// escapeJSON leaves the layout and encoding/json's own escapes alone and
// escapes what encoding/json writes raw; the value decodes unchanged.
func TestEscapeJSON(t *testing.T) {
	v := map[string]string{"k\u202e": "a\x1b\x7f\u0085\u009b\u2066b\u00e9\ufffd\n"}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := string(escapeJSON(b))
	want := "{\n  \"k\\u202e\": \"a\\u001b\\u007f\\u0085\\u009b\\u2066b\u00e9\ufffd\\n\"\n}"
	if got != want {
		t.Errorf("escapeJSON = %q, want %q", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(got), &back); err != nil || !maps.Equal(back, v) {
		t.Errorf("decoded %q (%v), want %q", back, err, v)
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"ünïcödé-text", 5, "ünïc…"},
	} {
		if got := clip(c.in, c.n); got != c.want {
			t.Errorf("clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// Every human-readable output of run, discover, sessions, replay, inspect
// and verify shows what servers, config files and recorded events say with
// their control characters escaped, never raw: a server's stderr, its error
// texts, its name for itself, its tool names and a tool call's output.
// The JSON outputs carry the same text losslessly, as \u escapes.
func TestOutputEscapesTerminalControls(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cmd, args := fixturetest.Command(t, "only=echo,fail", "add-tool=tool\t"+hostile, "name=peer"+hostile)
	brokenCmd, brokenArgs := fixturetest.Command(t, "fail-init", "stderr=broken"+hostile+"\nsecond\tline")
	servers := map[string]any{
		"hostile":       map[string]any{"command": cmd, "args": args},
		"broken":        map[string]any{"command": brokenCmd, "args": brokenArgs},
		"bad" + hostile: map[string]any{"command": "x"},
		"odd-command":   map[string]any{"command": "no-such-command" + hostile},
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "e.db")
	cwd := t.TempDir()
	callArgs, _ := json.Marshal(map[string]string{"message": "call" + hostile + "\n\tindented"})
	// inspect looks at the session while the hostile server's tools are
	// listed: at its tool call.
	callSeq := func() string {
		_, out, _ := runCmd(t, "--db", db, "--json", "replay", "last")
		for line := range strings.Lines(out) {
			var ev struct {
				Seq  uint64
				Type string
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "ToolCallStarted" {
				return fmt.Sprint(ev.Seq)
			}
		}
		t.Fatalf("no ToolCallStarted in the replay:\n%s", out)
		return ""
	}
	commands := []func() []string{
		func() []string {
			return []string{"run", "--once", "--cwd", cwd, "--config", cfg, "--call", "hostile/fail", "--args", string(callArgs)}
		},
		func() []string { return []string{"discover", "--cwd", cwd, "--config", cfg} },
		func() []string { return []string{"sessions"} },
		func() []string { return []string{"replay", "last"} },
		func() []string { return []string{"inspect", "last", "--seq", callSeq()} },
		func() []string { return []string{"verify", "--all"} },
	}
	// What must show, escaped, in each command's output.
	shows := map[string][]string{
		"run": {
			// JSON arguments carry no stray bytes: they arrive as U+FFFD.
			`call\x1b]0;pwned\x07\x1b[2J` + "\ufffd" + `31m\u009b2J\u202eevil\x7f\r` + "\ufffd" + `end`,
			`stderr: broken\x1b]0;pwned\x07`,
			`error mcp:bad\x1b]0;pwned\x07`,
		},
		"discover": {`bad\x1b]0;pwned\x07`, `no-such-command\x1b]0;pwned\x07`},
		"replay":   {`peer=peer\x1b]0;pwned\x07`, `tools=[echo fail tool\t\x1b]0;pwned\x07`},
		"inspect":  {`tool\t\x1b]0;pwned\x07`, `stderr: broken\x1b]0;pwned\x07`},
	}
	for _, c := range commands {
		a := c()
		code, out, errOut := runCmd(t, append([]string{"--db", db}, a...)...)
		t.Logf("%s: exit %d\n%s%s", a[0], code, out, errOut)
		checkTerminalSafe(t, a[0], out, a[0] == "run")
		checkTerminalSafe(t, a[0]+" (stderr)", errOut, false)
		for _, want := range shows[a[0]] {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %s", a[0], want)
			}
		}
	}

	for _, c := range commands[:5] {
		a := c()
		_, out, errOut := runCmd(t, append([]string{"--db", db, "--json"}, a...)...)
		checkTerminalSafe(t, a[0]+" --json", out, false)
		checkTerminalSafe(t, a[0]+" --json (stderr)", errOut, false)
		// The text survives decoding unchanged.
		dec := json.NewDecoder(strings.NewReader(out))
		found := false
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%s --json: %v\n%s", a[0], err, out)
			}
			enc, _ := json.Marshal(v) // re-encoded: the \u escapes are gone again
			found = found || strings.Contains(string(enc), "\u202eevil")
		}
		if a[0] != "sessions" && !found {
			t.Errorf("%s --json lost the server's text:\n%s", a[0], out)
		}
	}
}
