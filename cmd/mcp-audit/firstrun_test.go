package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

// A server whose connect failed reads failed in the gate line, the run
// table, run --json and inspect, and its error column keeps the cause
// without the `MCP server "x": connect: start "…"` prefix.
func TestFailedServerReadsFailedEverywhereWithItsCause(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeServers(t, map[string]any{
		"good":    fixtureServer(t, "only=echo"),
		"missing": map[string]any{"command": "no-such-mcp-server-binary"},
	})
	db := filepath.Join(t.TempDir(), "e.db")
	code, out, errOut := runCmd(t, "--db", db, "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "missing=failed") {
		t.Errorf("gate line:\n%s", out)
	}
	var rows []string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(l, "missing ") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("want the missing server in both tables:\n%s", out)
	}
	for _, r := range rows {
		f := strings.Fields(r)
		if f[1] != "failed" || !strings.HasSuffix(r, `exec: "no-such-mcp-server-binary": executable file not found in $PATH`) || strings.Contains(r, "MCP server") || strings.Contains(r, `start "`) {
			t.Errorf("row %q", r)
		}
	}
	if strings.Contains(out, "disconnected") {
		t.Errorf("a failed server reads disconnected:\n%s", out)
	}
	// No log line on stderr repeats the failure stdout shows.
	if strings.Contains(errOut, "no-such-mcp-server-binary") {
		t.Errorf("stderr repeats stdout: %q", errOut)
	}

	code, out, _ = runCmd(t, "--db", db, "--json", "inspect", "last", "--seq", "1000000")
	var in inspectJSON
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil {
		t.Fatalf("inspect: %d %s", code, out)
	}
	for _, s := range in.Servers {
		if want := map[string]projector.Status{"good": "disconnected", "missing": "failed"}[s.Name]; s.Status != want {
			t.Errorf("inspect: %s is %s, want %s (after the session closed)", s.Name, s.Status, want)
		}
	}
	code, out, _ = runCmd(t, "--db", db, "inspect", "last", "--seq", "1000000")
	if code != 0 || !strings.Contains(out, "failed") || strings.Contains(out, `MCP server "missing"`) {
		t.Errorf("inspect table: %d\n%s", code, out)
	}
}

func TestErrorCause(t *testing.T) {
	for in, want := range map[string]string{
		`MCP server "x": connect: start "foo": exec: "foo": executable file not found in $PATH`: `exec: "foo": executable file not found in $PATH`,
		`MCP server "x": connect: calling "initialize": EOF (process exited with status 1)`:     `calling "initialize": EOF (process exited with status 1)`,
		`Connection to MCP server "x" timed out after 30000ms; stderr: booting`:                 `connect timed out after 30000ms; stderr: booting`,
		`Listing tools of MCP server "x" timed out after 5000ms`:                                `tools/list timed out after 5000ms`,
		`MCP server "x": tools/list: boom` + "\nsecond line":                                    `tools/list: boom`,
		`MCP server "other": connect: refused`:                                                  `MCP server "other": connect: refused`,
		`server "x": "command" is required`:                                                     `server "x": "command" is required`,
	} {
		if got := errorCause("x", in); got != want {
			t.Errorf("errorCause(%q) = %q, want %q", in, got, want)
		}
	}
	now := time.Now()
	for _, c := range []struct {
		st   projector.ServerState
		want projector.Status
	}{
		{projector.ServerState{Status: "disconnected", Error: "boom"}, "failed"},
		{projector.ServerState{Status: "disconnected", Error: "crashed", ConnectedAt: now}, "disconnected"},
		{projector.ServerState{Status: "disconnected"}, "disconnected"},
		{projector.ServerState{Status: "connected", Error: "list failed", ConnectedAt: now}, "connected"},
		{projector.ServerState{Status: "needs-auth", Error: "401"}, "needs-auth"},
	} {
		if got := serverStatus(c.st); got != c.want {
			t.Errorf("serverStatus(%+v) = %s, want %s", c.st, got, c.want)
		}
	}
}

// A broken config file is reported once, on stdout, not also by the
// loader's and the session's log lines.
func TestBrokenConfigIsReportedOnce(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	project := t.TempDir()
	broken := filepath.Join(project, ".mcp.json")
	if err := os.WriteFile(broken, []byte(`{"mcpServers": {"x": `), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "e.db")
	code, out, errOut := runCmd(t, "--db", db, "run", "--once", "--cwd", project)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	if n := strings.Count(out+errOut, "unexpected end of JSON input"); n != 1 {
		t.Errorf("the broken file is reported %d times:\nstdout:\n%s\nstderr:\n%s", n, out, errOut)
	}
	if strings.Count(out, broken) != 1 {
		t.Errorf("the path is repeated:\n%s", out)
	}
}

// A session started without --cwd records the absolute directory it ran
// in, not ".".
func TestSessionRecordsAnAbsoluteCwd(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	project := t.TempDir()
	t.Chdir(project)
	cfg := writeServers(t, map[string]any{"good": fixtureServer(t, "only=echo")})
	db := filepath.Join(t.TempDir(), "e.db")
	if code, out, errOut := runCmd(t, "--db", db, "run", "--once", "--config", cfg); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ := runCmd(t, "--db", db, "--json", "sessions")
	var list []sessionJSON
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("sessions: %d %s", code, out)
	}
	want, _ := filepath.EvalSymlinks(project)
	got, _ := filepath.EvalSymlinks(list[0].Cwd)
	if !filepath.IsAbs(list[0].Cwd) || got != want {
		t.Errorf("cwd %q, want %q", list[0].Cwd, project)
	}
}

// run --once exits 0 with a failed server beside a connected one, and 1
// with --strict, saying which; --strict without --once is a usage error.
func TestRunOnceStrict(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeConfig(t, map[string][]string{"good": {"only=echo"}, "bad": {"fail-init"}})
	base := []string{"run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg}
	db := filepath.Join(t.TempDir(), "e.db")
	if code, _, errOut := runCmd(t, append([]string{"--db", db}, base...)...); code != 0 {
		t.Errorf("without --strict: exit %d %s", code, errOut)
	}
	code, _, errOut := runCmd(t, append([]string{"--db", db}, append(base, "--strict")...)...)
	if code != 1 || !strings.Contains(errOut, "--strict: 1 of 2 servers not connected (bad failed)") {
		t.Errorf("--strict: exit %d %q", code, errOut)
	}
	code, out, _ := runCmd(t, append([]string{"--db", db, "--json"}, append(base, "--strict")...)...)
	if code != 1 || !json.Valid([]byte(out)) {
		t.Errorf("--json --strict: exit %d %s", code, out)
	}
	good := writeConfig(t, map[string][]string{"good": {"only=echo"}})
	if code, _, errOut := runCmd(t, "--db", db, "run", "--once", "--strict", "--cwd", t.TempDir(), "--config", good); code != 0 {
		t.Errorf("--strict, all connected: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCmd(t, "--db", db, "run", "--strict", "--config", good); code != 2 || !strings.Contains(errOut, "--strict needs --once") {
		t.Errorf("--strict without --once: %d %q", code, errOut)
	}
}

// --call takes the mcp_<server>_<tool> name the tool table shows, as well
// as SERVER/TOOL.
func TestCallTakesTheExposedName(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeConfig(t, map[string][]string{"my_srv": {"only=echo"}})
	db := filepath.Join(t.TempDir(), "e.db")
	for _, call := range []string{"mcp_my_srv_echo", "my_srv/echo"} {
		code, out, errOut := runCmd(t, "--db", db, "--json", "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg,
			"--call", call, "--args", `{"text":"ping"}`)
		var got runJSON
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Call == nil || got.Call.Server != "my_srv" || got.Call.Tool != "echo" || got.Call.IsError {
			t.Errorf("--call %s: exit %d\n%s\n%s", call, code, out, errOut)
		}
	}
	code, _, errOut := runCmd(t, "--db", db, "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg, "--call", "mcp_my_srv_nope")
	if code != 1 || !strings.Contains(errOut, "--call mcp_my_srv_nope: no such tool") {
		t.Errorf("unknown name: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(t, "run", "--call", "echo"); code != 2 || !strings.Contains(errOut, "want SERVER/TOOL or a tool's mcp_SERVER_TOOL name") {
		t.Errorf("bad --call: %d %q", code, errOut)
	}
}

// discover --json carries the warnings the text output shows.
func TestDiscoverJSONCarriesWarnings(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeServers(t, map[string]any{"a": map[string]any{"command": "x", "env": map[string]string{"K": "${MCPLIFE_TEST_UNSET_VAR}"}}})
	code, out, _ := runCmd(t, "--json", "discover", "--cwd", t.TempDir(), "--config", cfg)
	var got struct {
		Servers  []json.RawMessage `json:"servers"`
		Warnings []string          `json:"warnings"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Servers) != 1 || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "MCPLIFE_TEST_UNSET_VAR is not set") {
		t.Fatalf("discover --json: %d %s", code, out)
	}
	_, text, _ := runCmd(t, "discover", "--cwd", t.TempDir(), "--config", cfg)
	if !strings.Contains(text, "warning "+got.Warnings[0]) {
		t.Errorf("text output:\n%s", text)
	}
	// No warning is an empty list, not a missing field.
	empty := writeServers(t, map[string]any{"a": map[string]any{"command": "x"}})
	_, out, _ = runCmd(t, "--json", "discover", "--cwd", t.TempDir(), "--config", empty)
	if !strings.Contains(out, `"warnings": []`) {
		t.Errorf("no warnings:\n%s", out)
	}
}

// A reader that goes away (| head -1) ends the command quietly, exit 0.
func TestClosedPipeEndsQuietly(t *testing.T) {
	var hist []any
	hist = append(hist, &events.SessionStarted{Cwd: "/p"})
	for range 5000 {
		hist = append(hist, &events.ServerDiscovered{Server: "s"})
	}
	db := writeHistory(t, "s", hist...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader has gone
	var errb strings.Builder
	code := Run(t.Context(), []string{"--db", db, "replay", "s"}, w, &errb)
	w.Close()
	if code != 0 || errb.Len() != 0 {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	// Other errors still tell.
	p := &pipeWriter{w: failingWriter{syscall.EIO}}
	if _, err := p.Write([]byte("x")); err == nil || p.closed() {
		t.Errorf("EIO: %v %t", err, p.closed())
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

// inspect --at past the session's end is an error naming how long the
// session lasted, not a silent clamp.
func TestInspectAtBeyondTheEnd(t *testing.T) {
	db := writeHistory(t, "sess-good", goodHistory...)
	code, _, errOut := runCmd(t, "--db", db, "inspect", "last", "--at", "99h")
	if code != 2 || !strings.Contains(errOut, "--at 99h is beyond the end of session sess-good, which lasted 751.0ms") {
		t.Errorf("--at 99h: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(t, "--db", db, "inspect", "last", "--at", "751ms"); code != 0 {
		t.Errorf("--at the last event: %d %q", code, errOut)
	}
	open := writeHistory(t, "sess-open", goodHistory[:8]...)
	code, _, errOut = runCmd(t, "--db", open, "inspect", "last", "--at", "+10s")
	if code != 2 || !strings.Contains(errOut, "beyond the last event of session sess-open, 20.0ms after its start") {
		t.Errorf("open session: %d %q", code, errOut)
	}
}

func TestTimelineTicksAreRound(t *testing.T) {
	for end, want := range map[time.Duration]time.Duration{
		566 * time.Millisecond:   100 * time.Millisecond,
		6265 * time.Millisecond:  1 * time.Second,
		1806 * time.Millisecond:  500 * time.Millisecond,
		10059 * time.Millisecond: 2 * time.Second,
		3 * time.Millisecond:     500 * time.Microsecond,
		45 * time.Minute:         500 * time.Second,
	} {
		if got := tickStep(end); got != want {
			t.Errorf("tickStep(%v) = %v, want %v", end, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0", 500 * time.Millisecond: "500ms", 1500 * time.Millisecond: "1.5s", 200 * time.Microsecond: "0.2ms", 2 * time.Second: "2s"} {
		if got := fmtTick(d); got != want {
			t.Errorf("fmtTick(%v) = %q, want %q", d, got, want)
		}
	}
}

// The timeline's ticks fall on round numbers, the gate is marked where it
// fell due and where it returned, and one tool is "1 tool".
func TestTimelineMarksTheGateTwiceAndRoundTicks(t *testing.T) {
	// The gate opens at the first connect, falls due 250ms later, and
	// returns at 600ms, waiting for a server without cached tools.
	db := writeHistory(t, "s",
		&events.SessionStarted{Cwd: "/p", Gate: 250 * time.Millisecond},
		&events.ConnectStarted{Server: "a", Transport: "stdio", Attempt: 1, Round: 1},
		&events.ConnectStarted{Server: "b", Transport: "stdio", Attempt: 1, Round: 1},
		2*time.Millisecond,
		&events.ServerConnected{Server: "a"},
		&events.ToolsListed{Server: "a", Count: 1},
		598*time.Millisecond,
		&events.ServerConnected{Server: "b"},
		&events.ToolsListed{Server: "b", Count: 2},
		&events.StartupGateElapsed{Round: 1, Gate: 250 * time.Millisecond, Elapsed: 600 * time.Millisecond},
	)
	out := filepath.Join(t.TempDir(), "t.svg")
	if code, stdout, errOut := runCmd(t, "--db", db, "timeline", "s", "-o", out); code != 0 || !strings.Contains(stdout, "2 server rows, 1 gate\n") {
		t.Fatalf("timeline: %d %q %q", code, stdout, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		G []struct {
			Class string `xml:"class,attr"`
			Line  []struct {
				Class string  `xml:"class,attr"`
				X1    float64 `xml:"x1,attr"`
			} `xml:"line"`
			Text []struct {
				Class string `xml:"class,attr"`
				Body  string `xml:",chardata"`
			} `xml:"text"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var ticks, texts []string
	var due, returned float64
	for _, g := range doc.G {
		for _, tx := range g.Text {
			texts = append(texts, tx.Body)
		}
		switch g.Class {
		case "axis":
			for _, tx := range g.Text {
				ticks = append(ticks, tx.Body)
			}
		case "gate":
			for _, l := range g.Line {
				switch l.Class {
				case "gate-due":
					due = l.X1
				case "gate-returned":
					returned = l.X1
				}
			}
		}
	}
	if got := strings.Join(ticks, " "); got != "0 100ms 200ms 300ms 400ms 500ms 600ms" {
		t.Errorf("ticks %q", got)
	}
	// 250ms and 600ms on a 600ms axis of tlPlotW pixels.
	if want := tlLabelW + 250.0/600*tlPlotW; due < want-1 || due > want+1 {
		t.Errorf("gate due at x=%.1f, want %.1f", due, want)
	}
	if want := float64(tlLabelW + tlPlotW); returned < want-1 || returned > want+1 {
		t.Errorf("gate returned at x=%.1f, want %.1f", returned, want)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"ready, 1 tool\n", "ready, 2 tools", "due at 250.0ms", "returned at 600.0ms", "connect 2.0ms, list <0.1ms"} {
		if !strings.Contains(all+"\n", want) {
			t.Errorf("timeline lacks %q:\n%s", want, all)
		}
	}
}
