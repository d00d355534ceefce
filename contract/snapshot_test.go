package contract

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcplife/mcplife/events"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// history builds envelopes of several sessions with sequence numbers.
type history struct {
	envs []events.Envelope
	at   time.Time
}

func (h *history) add(session string, evs ...events.Event) {
	for _, ev := range evs {
		h.at = h.at.Add(time.Second)
		env := events.MustNew(session, ev, h.at)
		env.Seq = uint64(len(h.envs) + 1)
		h.envs = append(h.envs, env)
	}
}

func echoTool(typ string) events.ToolDef {
	return events.ToolDef{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"` + typ + `"}}}`)}
}

func TestSnapshotTakesTheLastListing(t *testing.T) {
	h := &history{at: t0}
	h.add("s1",
		&events.ServerConnected{Server: "fx", Capabilities: json.RawMessage(`{"tools":{},"resources":{}}`)},
		&events.ToolsListed{Server: "fx", Tools: []events.ToolDef{echoTool("number")}},
		&events.ResourcesListed{Server: "fx", Resources: []events.ResourceDef{{URI: "a://1", Name: "one"}}},
		// A list served from the cache is an older listing: not taken.
		&events.ResourcesListed{Server: "fx", Resources: []events.ResourceDef{}, Cause: events.CauseCache},
	)
	h.add("s2", &events.ToolsListed{Server: "fx", Tools: []events.ToolDef{echoTool("string")}})
	h.add("s1", &events.ToolsListed{Server: "fx", Tools: []events.ToolDef{echoTool("integer")}, Cause: events.CauseListChanged},
		&events.ToolsListed{Server: "other", Tools: []events.ToolDef{}})

	snap := NewSnapshot("s1")
	for _, env := range h.envs {
		snap.Apply(env)
	}
	if snap.LastSeq() != 7 {
		t.Errorf("LastSeq = %d", snap.LastSeq())
	}
	var names []string
	for _, s := range snap.Servers() {
		names = append(names, s.Server)
	}
	if !cmp.Equal(names, []string{"fx", "other"}) {
		t.Errorf("servers %v", names)
	}
	fx, ok := snap.Server("fx")
	if !ok || len(fx.Tools) != 1 || string(fx.Tools[0].InputSchema) != string(echoTool("integer").InputSchema) {
		t.Fatalf("fx = %+v", fx)
	}
	if !fx.HasResources || len(fx.Resources) != 1 || !fx.HasPrompts || len(fx.Prompts) != 0 {
		t.Errorf("fx resources %v (known %t), prompts known %t: want the live list, and no prompts as the server offers none",
			fx.Resources, fx.HasResources, fx.HasPrompts)
	}
	if fx.Session != "s1" || fx.Seq != 6 {
		t.Errorf("fx seen at %s #%d", fx.Session, fx.Seq)
	}
	other, _ := snap.Server("other")
	if !other.HasTools || other.HasResources || other.HasPrompts {
		t.Errorf("other: known %t %t %t; without capabilities only what it listed is known", other.HasTools, other.HasResources, other.HasPrompts)
	}
}

func TestCompareSnapshotsServerAddedAndRemoved(t *testing.T) {
	h := &history{at: t0}
	h.add("a", &events.ToolsListed{Server: "gone", Tools: []events.ToolDef{}}, &events.ToolsListed{Server: "both", Tools: []events.ToolDef{echoTool("number")}})
	h.add("b", &events.ToolsListed{Server: "new", Tools: []events.ToolDef{}}, &events.ToolsListed{Server: "both", Tools: []events.ToolDef{echoTool("integer")}})
	a, b := NewSnapshot("a"), NewSnapshot("b")
	for _, env := range h.envs {
		a.Apply(env)
		b.Apply(env)
	}
	got := []string{}
	for _, c := range CompareSnapshots(a, b) {
		got = append(got, c.Server+" "+line(c))
	}
	want := []string{
		"both breaking changed /tools/echo/inputSchema/properties/n/type",
		"gone breaking removed ",
		"new non-breaking added ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// A history keeps one surface per session, drops repeats, carries over
// kinds a session did not list, and starts at the last surface before
// since.
func TestHistorySteps(t *testing.T) {
	h := &history{at: t0}
	prompts := []events.PromptDef{{Name: "p"}}
	h.add("s1", &events.ToolsListed{Server: "fx", Tools: []events.ToolDef{echoTool("number")}},
		&events.PromptsListed{Server: "fx", Prompts: prompts})
	h.add("s2", &events.ToolsListed{Server: "fx", Tools: []events.ToolDef{echoTool("number")}}) // same, prompts not listed
	h.add("s3", &events.ToolsListed{Server: "fx", Tools: []events.ToolDef{echoTool("integer")}},
		&events.PromptsListed{Server: "fx", Prompts: prompts})
	h.add("s4", &events.ToolsListed{Server: "elsewhere"})
	h.add("s5", &events.ToolsListed{Server: "fx", Tools: []events.ToolDef{echoTool("number")}},
		&events.PromptsListed{Server: "fx", Prompts: []events.PromptDef{}})

	steps := func(since time.Time) []string {
		hist := NewHistory("fx", since)
		for _, env := range h.envs {
			hist.Apply(env)
		}
		out := []string{}
		for _, s := range hist.Steps() {
			for _, c := range s.Changes {
				out = append(out, s.From.Session+"→"+s.To.Session+" "+line(c))
			}
		}
		return out
	}
	want := []string{
		"s2→s3 breaking changed /tools/echo/inputSchema/properties/n/type",
		"s3→s5 non-breaking changed /tools/echo/inputSchema/properties/n/type",
		"s3→s5 breaking removed /prompts/p",
	}
	if diff := cmp.Diff(want, steps(time.Time{})); diff != "" {
		t.Errorf("all history: mismatch (-want +got):\n%s", diff)
	}
	// Since s4's time: s3 is the baseline.
	if diff := cmp.Diff(want[1:], steps(h.envs[5].Time)); diff != "" {
		t.Errorf("since: mismatch (-want +got):\n%s", diff)
	}
}
