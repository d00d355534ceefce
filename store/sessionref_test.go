package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

// A reference names one session: "last", an exact id, or a prefix of one
// id; anything else is a SessionRefError that says why.
func TestResolveSession(t *testing.T) {
	st := memory.New()
	defer st.Close()
	if _, err := store.ResolveSession(t.Context(), st, "last"); !errors.As(err, new(*store.SessionRefError)) || err.Error() != "no sessions recorded yet" {
		t.Fatalf("last of an empty store: %v", err)
	}
	for _, id := range []string{"abc1", "abc2", "abd", "ab"} {
		env := events.MustNew(id, &events.SessionStarted{Cwd: "/"}, time.Now())
		if _, err := st.Append(t.Context(), id, store.AnyVersion, []events.Envelope{env}); err != nil {
			t.Fatal(err)
		}
	}
	for ref, want := range map[string]string{"last": "ab", "abd": "abd", "ab": "ab", "abc2": "abc2", "abc1": "abc1"} {
		if got, err := store.ResolveSession(t.Context(), st, ref); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", ref, got, err, want)
		}
	}
	for ref, want := range map[string]string{"abc": `session prefix "abc" is ambiguous (2 sessions)`, "zz": `no session "zz"`} {
		if _, err := store.ResolveSession(t.Context(), st, ref); !errors.As(err, new(*store.SessionRefError)) || err.Error() != want {
			t.Errorf("%q: %v, want %s", ref, err, want)
		}
	}
}
