package loader

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
)

// TestMaxOutputBytesMapping: the native format (and the plain mcp.json,
// which reads the native fields) maps "maxOutputBytes" onto the server's
// output budget; 0 (no limit) is kept, unset stays nil (the default), and
// other formats, which have no per-server budget, leave it unset.
func TestMaxOutputBytesMapping(t *testing.T) {
	w := newWorld(t)
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "big": {"command": "x", "maxOutputBytes": 1048576},
  "text": {"command": "x", "maxOutputBytes": "4096"},
  "none": {"command": "x", "maxOutputBytes": 0},
  "unset": {"command": "x"}
}}`)
	w.write("./mcp.json", `{"mcpServers": {"plain": {"command": "x", "maxOutputBytes": 2048}}}`)
	w.write("~/.claude.json", `{"mcpServers": {"claude": {"command": "x", "maxOutputBytes": 2048}}}`)
	d := w.load()
	if len(d.Errors) > 0 || len(d.Skipped) > 0 {
		t.Fatalf("errors %v, skipped %v", d.Errors, skips(d))
	}
	got := map[string]int64{}
	for _, s := range d.Servers {
		got[s.Config.Name] = -1
		if s.Config.MaxOutputBytes != nil {
			got[s.Config.Name] = *s.Config.MaxOutputBytes
		}
	}
	want := map[string]int64{"big": 1 << 20, "text": 4096, "none": 0, "unset": -1, "plain": 2048, "claude": -1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MaxOutputBytes mismatch (-want +got, -1 for nil):\n%s", diff)
	}
}

// TestMaxOutputBytesInvalid: a negative, fractional or non-numeric budget
// makes its entry invalid with a message naming the server and the field,
// the entry's position naming the file; the file's other entries load.
// Validation refuses a negative budget in a configuration given directly.
func TestMaxOutputBytesInvalid(t *testing.T) {
	w := newWorld(t)
	native := w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "neg": {"command": "x", "maxOutputBytes": -1},
  "half": {"command": "x", "maxOutputBytes": 10.5},
  "word": {"command": "x", "maxOutputBytes": "lots"},
  "ok": {"command": "x", "maxOutputBytes": 10}
}}`)
	d := w.load()
	if diff := cmp.Diff([]string{"ok"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	want := []skipView{
		{"neg", "invalid", `Server "neg": "maxOutputBytes" must be a non-negative whole number of bytes`},
		{"half", "invalid", `Server "half": "maxOutputBytes" must be a non-negative whole number of bytes`},
		{"word", "invalid", `Server "word": "maxOutputBytes" must be a number`},
	}
	if diff := cmp.Diff(want, skips(d)); diff != "" {
		t.Fatalf("skipped mismatch (-want +got):\n%s", diff)
	}
	for _, s := range d.Skipped {
		if s.Source.Path != native || !strings.HasPrefix(s.Position, native+":") {
			t.Errorf("%s: source %s at %s, want %s", s.Name, s.Source.Path, s.Position, native)
		}
	}
	msgs := validate(events.ServerConfig{Name: "a", Command: "x", MaxOutputBytes: new(int64(-5))}, nil)
	if want := []string{`Server "a": "maxOutputBytes" must not be negative`}; !slices.Equal(msgs, want) {
		t.Errorf("validate = %q, want %q", msgs, want)
	}
}
