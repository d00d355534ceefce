package loader

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
)

// The native format's "record" turns a server's transcript on; a server
// without it hashes as before, and an unknown value makes the entry
// invalid with a message naming the field.
func TestRecordTranscript(t *testing.T) {
	w := newWorld(t)
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "a": {"command": "srv", "record": "transcript"},
  "b": {"command": "srv"},
  "c": {"command": "srv", "record": "everything"}
}}`)
	d := w.load()
	if diff := cmp.Diff([]string{"a", "b"}, names(d)); diff != "" {
		t.Fatalf("servers mismatch (-want +got):\n%s", diff)
	}
	if got := d.Servers[0].Config.Record; got != events.RecordTranscript {
		t.Errorf("a: Record = %q, want %q", got, events.RecordTranscript)
	}
	a, b := d.Servers[0].Config, d.Servers[1].Config
	if a.Hash() == b.Hash() {
		t.Error("record does not change the config hash")
	}
	if b.Hash() != (events.ServerConfig{Command: "srv"}).Hash() {
		t.Error("a config without record hashes differently than before")
	}
	if diff := cmp.Diff([]skipView{{"c", "invalid", `Server "c": "record" must be "transcript", not "everything"`}}, skips(d)); diff != "" {
		t.Errorf("skipped mismatch (-want +got):\n%s", diff)
	}
}
