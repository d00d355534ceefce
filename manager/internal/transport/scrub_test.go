package transport

import (
	"encoding/json"
	"testing"

	"github.com/mcplife/mcplife/events"
)

// Ordinary words that happen to be env values are not taken out of what
// the model reads, and JSON stays valid and unchanged when nothing in it
// is a secret.
func TestScrubListedKeepsOrdinaryText(t *testing.T) {
	secrets := []string{"true", "production", "READONLY", "tok-3f9a8b7c6d5e", `quo"te-secret-1`}
	r := Resolved{scrub: newScrubber(secrets), lists: newListScrubber(secrets)}
	if got := r.scrubListed("true in production, READONLY"); got != "true in production, READONLY" {
		t.Errorf("ordinary words scrubbed: %q", got)
	}
	if got := r.scrubListed("uses tok-3f9a8b7c6d5e"); got != "uses "+events.Redacted {
		t.Errorf("secret kept: %q", got)
	}
	raw := json.RawMessage(`{"type":"object",  "properties":{"a":{"type":"boolean","default":true}}}`)
	if got := r.scrubListedJSON(raw); string(got) != string(raw) {
		t.Errorf("unchanged JSON rewritten: %s", got)
	}
	raw = json.RawMessage(`{"properties":{"tok-3f9a8b7c6d5e":{"default":"quo\"te-secret-1","n":12345678901}}}`)
	got := r.scrubListedJSON(raw)
	want := `{"properties":{"<redacted>":{"default":"<redacted>","n":12345678901}}}`
	if string(got) != want {
		t.Errorf("scrubbed JSON\n got %s\nwant %s", got, want)
	}
}
