package session_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
)

// Roots set in the manager's options are recorded in SessionStarted,
// absolute (a relative one against the session's directory); the default
// root records nothing, so sessions without roots record what they did.
func TestRootsRecordedInSessionStarted(t *testing.T) {
	cwd := t.TempDir()
	for _, c := range []struct {
		roots []string
		want  string
	}{
		{nil, ""},
		{[]string{"/srv/notes", "docs"}, `["/srv/notes","` + filepath.Join(cwd, "docs") + `"]`},
	} {
		j, st := newJournal(t)
		s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: cwd}, Servers: []events.ServerConfig{},
			Manager: &manager.Options{Roots: c.roots}})
		if err != nil {
			t.Fatal(err)
		}
		s.Close(context.Background())
		for env, err := range st.ReadStream(t.Context(), s.ID(), 1) {
			if err != nil {
				t.Fatal(err)
			}
			var started events.SessionStarted
			if err := json.Unmarshal(env.Data, &started); err != nil {
				t.Fatal(err)
			}
			got, ok := started.Options[session.RootsOption]
			if got != c.want || ok != (c.want != "") {
				t.Errorf("roots %v: recorded %q (present %v), want %q", c.roots, got, ok, c.want)
			}
			break
		}
	}
}
