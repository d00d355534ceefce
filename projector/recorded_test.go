package projector

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
)

var update = flag.Bool("update", false, "rewrite testdata/recorded-session.* from the fixture")

const (
	recordedEvents = "testdata/recorded-session.jsonl"
	recordedGolden = "testdata/recorded-session.golden"
)

// TestRecordedSession replays a recorded session (one envelope per line,
// as the store holds them) twice and compares both runs with each other and
// with the golden description of the final view.
func TestRecordedSession(t *testing.T) {
	if *update {
		var buf bytes.Buffer
		for _, env := range realisticSession("recorded", 6, 3, 160) {
			b, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		writeFile(t, recordedEvents, buf.Bytes())
	}
	envs := readEnvelopes(t, recordedEvents)
	first, second := NewToolView("recorded"), NewToolView("recorded")
	for _, env := range envs {
		first.Apply(env)
	}
	for _, env := range envs {
		second.Apply(env)
	}
	if diff := cmp.Diff(describeView(first), describeView(second)); diff != "" {
		t.Fatalf("two replays differ (-first +second):\n%s", diff)
	}
	got := describeView(first)
	if *update {
		writeFile(t, recordedGolden, []byte(got))
	}
	want, err := os.ReadFile(recordedGolden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readEnvelopes(t *testing.T, name string) []events.Envelope {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var envs []events.Envelope
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var env events.Envelope
		if err := json.Unmarshal(sc.Bytes(), &env); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		envs = append(envs, env)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return envs
}

// describeView renders a view as stable text: servers, tools, counters.
func describeView(v *ToolView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version %d, last seq %d, counts %+v\n", v.Version(), v.LastSeq(), v.Counts())
	for _, s := range v.Servers() {
		ready := "-"
		if d, ok := s.ReadyAfter(); ok {
			ready = d.String()
		}
		fmt.Fprintf(&b, "server %s %s %s tools=%d hidden=%v deferred=%v attempt=%d ready=%s error=%q reason=%q\n",
			s.Name, s.Status, s.Transport, len(s.Tools), s.Hidden, s.Deferred, s.Attempt, ready, s.Error, s.DisconnectReason)
	}
	for _, tool := range v.Tools() {
		fmt.Fprintf(&b, "tool %s %s/%s deferred=%v\n", tool.Name, tool.Server, tool.Original, tool.Deferred)
	}
	return b.String()
}
