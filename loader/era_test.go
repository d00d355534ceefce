package loader

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
)

// The native format's "era" fixes a server's handshake; a server without
// it hashes as before, and a value that is unknown or contradicts the
// pinned protocol version or the transport makes the entry invalid with
// a message naming the field.
func TestEraSetting(t *testing.T) {
	w := newWorld(t)
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "a": {"command": "srv", "era": "legacy"},
  "b": {"command": "srv"},
  "c": {"command": "srv", "era": "modern", "protocolVersion": "2026-07-28"},
  "d": {"command": "srv", "era": "ancient"},
  "e": {"command": "srv", "era": "legacy", "protocolVersion": "2026-07-28"},
  "f": {"type": "sse", "url": "https://sse.example.com/sse", "era": "modern"}
}}`)
	d := w.load()
	if diff := cmp.Diff([]string{"a", "b", "c"}, names(d)); diff != "" {
		t.Fatalf("servers mismatch (-want +got):\n%s", diff)
	}
	if got := d.Servers[0].Config.Era; got != events.ConfigEraLegacy {
		t.Errorf("a: Era = %q, want %q", got, events.ConfigEraLegacy)
	}
	if b := d.Servers[1].Config; b.Hash() != (events.ServerConfig{Command: "srv"}).Hash() {
		t.Error("a config without era hashes differently than before")
	}
	if diff := cmp.Diff([]skipView{
		{"d", "invalid", `Server "d": "era" must be "auto", "modern" or "legacy", not "ancient"`},
		{"e", "invalid", `Server "e": "era" is "legacy" but "protocolVersion" "2026-07-28" is of the modern era (want a version before 2026-07-28)`},
		{"f", "invalid", `Server "f": an sse server speaks the legacy era only ("era" and "protocolVersion" cannot make it modern; use type "http")`},
	}, skips(d)); diff != "" {
		t.Errorf("skipped mismatch (-want +got):\n%s", diff)
	}
}
