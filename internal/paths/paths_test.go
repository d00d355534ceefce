package paths

import (
	"path/filepath"
	"testing"
)

func TestDefaultStore(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv(StoreEnv, "")
	for _, c := range []struct{ xdg, want string }{
		{"", filepath.Join(home, ".local", "state", "mcplife", "events.db")},
		{"relative/state", filepath.Join(home, ".local", "state", "mcplife", "events.db")}, // ignored
		{"/x/state", filepath.Join("/x/state", "mcplife", "events.db")},
	} {
		t.Setenv("XDG_STATE_HOME", c.xdg)
		if got, err := DefaultStore(); err != nil || got != c.want {
			t.Errorf("XDG_STATE_HOME=%q: DefaultStore() = %q, %v; want %q", c.xdg, got, err, c.want)
		}
	}
	t.Setenv(StoreEnv, "/elsewhere/audit.db")
	if got, _ := DefaultStore(); got != "/elsewhere/audit.db" {
		t.Errorf("with %s set: DefaultStore() = %q", StoreEnv, got)
	}
	if got, _ := StateStore(); got != filepath.Join("/x/state", "mcplife", "events.db") {
		t.Errorf("StateStore() = %q, want the state directory's file whatever %s says", got, StoreEnv)
	}
}

func TestIsPostgres(t *testing.T) {
	for s, want := range map[string]bool{"postgres://h/db": true, "postgresql://h/db": true, "/tmp/postgres://x": false, "events.db": false} {
		if IsPostgres(s) != want {
			t.Errorf("IsPostgres(%q) = %v", s, !want)
		}
	}
}
