package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/sqlite"
)

// runCmd runs the command in-process and returns its exit status and output.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// writeHistory stores a hand-made session in a new database and returns
// its path.
func writeHistory(t *testing.T, session string, evs ...any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	appendHistory(t, path, session, evs...)
	return path
}

// appendHistory appends events (a string element sets the correlation id
// of the following ones; a time.Duration advances the clock).
func appendHistory(t *testing.T, path, session string, evs ...any) {
	t.Helper()
	db, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	corr := ""
	var envs []events.Envelope
	for _, it := range evs {
		switch v := it.(type) {
		case string:
			corr = v
		case time.Duration:
			now = now.Add(v)
		case events.Event:
			envs = append(envs, events.MustNew(session, v, now).WithCorrelation(corr))
		case rawEnvelope:
			v.Time = now
			envs = append(envs, v.Envelope)
		}
	}
	if _, err := db.Append(context.Background(), session, store.AnyVersion, envs); err != nil {
		t.Fatal(err)
	}
}

// rawEnvelope is stored as it is, for histories with broken rows.
type rawEnvelope struct{ events.Envelope }

func goodTime() time.Time { return time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC) }

var goodHistory = []any{
	&events.SessionStarted{Cwd: "/proj", Gate: 250 * time.Millisecond},
	&events.ServerDiscovered{Server: "fast", Transport: "stdio", Source: events.SourceMeta{Provider: "native", Level: "project"}},
	&events.ServerDiscovered{Server: "slow", Transport: "stdio"},
	&events.ConnectStarted{Server: "fast", Transport: "stdio", Attempt: 1, Round: 1},
	&events.ConnectStarted{Server: "slow", Transport: "stdio", Attempt: 1, Round: 1},
	20 * time.Millisecond,
	&events.ServerConnected{Server: "fast", ProtocolVersion: "2025-11-25"},
	5 * time.Millisecond,
	&events.ToolsListed{Server: "fast", Cause: "initial", Count: 1, Tools: []events.ToolDef{{Name: "echo"}}},
	225 * time.Millisecond,
	&events.StartupGateElapsed{Round: 1, Gate: 250 * time.Millisecond, Elapsed: 250 * time.Millisecond, Outcomes: map[string]events.Outcome{"fast": "ready", "slow": "deferred"}},
	&events.CachedToolsServed{Server: "slow", Count: 1, Tools: []events.ToolDef{{Name: "wait"}}},
	"call-1",
	&events.ToolCallStarted{Server: "fast", Tool: "echo", Name: "mcp_fast_echo"},
	time.Millisecond,
	&events.ToolCallFinished{Server: "fast", Tool: "echo"},
	"",
	500 * time.Millisecond,
	&events.ServerConnected{Server: "slow"},
	&events.ToolsListed{Server: "slow", Cause: "late", Count: 1, Tools: []events.ToolDef{{Name: "wait"}}},
	&events.Disconnected{Server: "fast", Reason: "requested"},
	&events.Disconnected{Server: "slow", Reason: "requested"},
	&events.SessionClosed{},
}

func TestSessionsReplayInspectVerifyOnAGoodHistory(t *testing.T) {
	db := writeHistory(t, "sess-good", goodHistory...)

	code, out, errOut := runCmd(t, "--db", db, "sessions")
	if code != 0 || !strings.Contains(out, "sess-good") || !strings.Contains(out, "/proj") {
		t.Fatalf("sessions: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCmd(t, "sessions", "--db", db, "--json")
	var list []sessionJSON
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || len(list[0].Servers) != 2 || !list[0].Closed {
		t.Fatalf("sessions --json: %d %s", code, out)
	}

	code, out, _ = runCmd(t, "--db", db, "replay", "last")
	if code != 0 {
		t.Fatalf("replay: %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+16 || !strings.Contains(lines[1], "+0.0ms") || !strings.Contains(lines[len(lines)-1], "SessionClosed") {
		t.Fatalf("replay output:\n%s", out)
	}
	if !strings.Contains(out, "+250.0ms") {
		t.Errorf("replay lacks the relative time of the gate:\n%s", out)
	}

	// At the gate the slow server's tools are deferred; at the end nothing is connected.
	code, out, _ = runCmd(t, "--db", db, "--json", "inspect", "sess-good", "--at", "251ms")
	var in inspectJSON
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil {
		t.Fatalf("inspect: %d %s", code, out)
	}
	if len(in.Tools) != 2 || !in.Tools[1].Deferred || in.Tools[1].Name != "mcp_slow_wait" {
		t.Errorf("tools at 251ms = %+v", in.Tools)
	}
	code, out, _ = runCmd(t, "--db", db, "--json", "inspect", "sess-", "--seq", "7")
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || in.AtSeq != 7 || len(in.Tools) != 1 {
		t.Fatalf("inspect --seq 7: %d %s", code, out)
	}

	code, out, _ = runCmd(t, "--db", db, "verify", "--all")
	if code != 0 || !strings.Contains(out, "verified 1 session(s), 16 events: ok") {
		t.Fatalf("verify: %d %s", code, out)
	}
}

func TestVerifyFailsOnOutOfOrderHistory(t *testing.T) {
	db := writeHistory(t, "bad",
		&events.ServerDiscovered{Server: "a"},
		&events.ToolsListed{Server: "a", Count: 1},
		&events.ConnectStarted{Server: "a", Round: 1},
	)
	code, out, _ := runCmd(t, "--db", db, "verify", "bad")
	if code != 1 || !strings.Contains(out, "list-after-connected") || !strings.Contains(out, "seq 2") {
		t.Fatalf("verify: %d\n%s", code, out)
	}
}

func TestTimelineParsesWithOneRowPerServerAndTheGate(t *testing.T) {
	db := writeHistory(t, "sess-good", goodHistory...)
	for _, ext := range []string{".svg", ".html"} {
		out := filepath.Join(t.TempDir(), "t"+ext)
		if code, _, errOut := runCmd(t, "--db", db, "timeline", "last", "-o", out); code != 0 {
			t.Fatalf("timeline %s: %d %s", ext, code, errOut)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		rows, gates := map[string]bool{}, 0
		dec := xml.NewDecoder(f)
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s does not parse as XML: %v", ext, err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "g" {
				for _, a := range se.Attr {
					if a.Name.Local == "class" && a.Value == "gate" {
						gates++
					}
					if a.Name.Local == "data-server" {
						rows[a.Value] = true
					}
				}
			}
		}
		f.Close()
		if len(rows) != 2 || !rows["fast"] || !rows["slow"] || gates != 1 {
			t.Errorf("%s: rows %v, gates %d", ext, rows, gates)
		}
	}
}

func TestInspectionNeverCreatesOrModifiesTheStore(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.db")
	code, _, errOut := runCmd(t, "--db", missing, "sessions")
	if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, missing) {
		t.Fatalf("missing db: %d %q", code, errOut)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("sessions created the database")
	}
	garbage := filepath.Join(t.TempDir(), "garbage.db")
	os.WriteFile(garbage, []byte("not a database at all, not even close......................................................"), 0o644)
	before, _ := os.ReadFile(garbage)
	code, _, errOut = runCmd(t, "--db", garbage, "replay", "last")
	after, _ := os.ReadFile(garbage)
	if code != 2 || !bytes.Equal(before, after) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("garbage db: %d %q (modified: %t)", code, errOut, !bytes.Equal(before, after))
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"replay"}, {"inspect", "x"}, {"timeline", "x", "-o", "f.png"}, {"sessions", "--bogus"}} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code, out, _ := runCmd(t, "help"); code != 0 || !strings.Contains(out, "timeline") || strings.Contains(out, fixtureCommand) {
		t.Errorf("help: %d %s", code, out)
	}
}
