package peers

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcplife/mcplife/internal/lifecycletest"
	"github.com/mcplife/mcplife/internal/peers"
	"github.com/mcplife/mcplife/manager"
)

// server-filesystem works in the client's roots, not in the folder on its
// command line. A root outside the session's directory, given for the
// session (manager Options.Roots) or for the server (its config's
// roots), lets it read there; without one (the default root is the
// session's directory alone) a read there is refused.
func TestFilesystemRootOutsideCwd(t *testing.T) {
	node, script := peers.Filesystem(t)
	outside := t.TempDir()
	notes := filepath.Join(outside, "notes.txt")
	if err := os.WriteFile(notes, []byte("kept outside the project\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		sessionRoot bool // Options.Roots holds outside
		serverRoot  bool // the server's config's roots hold outside
		readable    bool
	}{
		{name: "session root", sessionRoot: true, readable: true},
		{name: "server root", serverRoot: true, readable: true},
		{name: "no root", readable: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var opts manager.Options
			if c.sessionRoot {
				opts.Roots = []string{outside}
			}
			e := &env{lifecycletest.NewWith(t, session, &opts)}
			ctx := lifecycletest.Context(t)
			marker := newMarker(t)
			// The folder on the command line, which the roots replace.
			cfg := launches[0].config(t, peers.FilesystemPackage, node, script, t.TempDir())
			cfg.Name = "fs"
			cfg.Env = map[string]string{markerVar: marker}
			if c.serverRoot {
				cfg.Roots = []string{outside}
			}
			e.connect(ctx, cfg)
			allowed := e.Cwd
			if c.readable {
				allowed = outside
			}
			waitAllowed(ctx, t, e, allowed)
			res, err := e.Tool("fs", "read_text_file").Call(ctx, map[string]any{"path": notes})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.readable && (res.Result.IsError || res.Text() != "kept outside the project\n"):
				t.Errorf("read in the root %s: %q (error %v)", outside, res.Text(), res.Result.IsError)
			case !c.readable && !res.Result.IsError:
				t.Errorf("read outside every root succeeded: %q", res.Text())
			}
			teardown(ctx, t, e, marker)
		})
	}
}
