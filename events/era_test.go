package events

import (
	"encoding/json"
	"strings"
	"testing"
)

// The cache hints sit flat beside a list's other fields, are left out for
// lists without them (so events of the legacy era encode as before), and
// show in the event's description only when present.
func TestCacheHintsAreAdditive(t *testing.T) {
	old := `{"server":"s","configHash":"h","tools":[],"toolsHash":"x","count":0,"duration":5,"cause":"initial"}`
	var e ToolsListed
	if err := json.Unmarshal([]byte(old), &e); err != nil {
		t.Fatal(err)
	}
	if e.CacheHints != (CacheHints{}) {
		t.Fatalf("hints of an event recorded before them: %+v", e.CacheHints)
	}
	b, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != old {
		t.Fatalf("re-encoded %s, want %s", b, old)
	}
	if d := Describe(&e); strings.Contains(d, "ttl") || strings.Contains(d, "scope") {
		t.Errorf("description %q names hints the list does not have", d)
	}

	e.CacheHints = CacheHints{TTLMs: 1000, CacheScope: CacheScopePrivate, AuthContext: "https://as.example a1b2"}
	b, err = json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ttlMs":1000`, `"cacheScope":"private"`, `"authContext":"https://as.example a1b2"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	if !e.Private() {
		t.Error("a private list is not Private")
	}
	if d := Describe(&e); !strings.HasSuffix(d, " ttlMs=1000 scope=private") {
		t.Errorf("description %q", d)
	}
}
