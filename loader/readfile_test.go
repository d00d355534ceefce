package loader

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// loadWithin runs LoadConfigs and fails the test when it has not returned
// within a generous deadline, so a config file that blocks its reader fails
// the test instead of hanging the test binary until its own timeout.
func (w *world) loadWithin(mod ...func(*Options)) *Discovery {
	w.t.Helper()
	o := w.opts()
	for _, m := range mod {
		m(&o)
	}
	type result struct {
		d   *Discovery
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := LoadConfigs(context.Background(), o)
		done <- result{d, err}
	}()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			w.t.Fatalf("LoadConfigs: %v", r.err)
		}
		return r.d
	case <-deadline.C:
		w.t.Fatal("LoadConfigs did not return: a config file blocked its reader")
		return nil
	}
}

// refusedFile is a kind of file the loader must refuse to read.
type refusedFile struct {
	name string
	// make creates the file at path and returns the path whose opens
	// would show that it was read ("" when they cannot be watched).
	make func(t *testing.T, path string) (watched string)
	// why is the error message after "<path>: ".
	why string
}

// The places a refused file is put: Claude Code's project file (read by
// its own code path), a project file read through the provider table, and
// a user-level file, which must get the same checks.
var refusedPlaces = []string{"./.mcp.json", "./.cursor/mcp.json", "~/.cursor/mcp.json"}

// testRefusedFiles puts each kind of file at each place, with project
// configs enabled and disabled. Enabled (and always for user-level files):
// one error naming the file and saying why, and every other file still
// loads. Disabled: no project-level file is opened at all, not even a good
// one, and a warning names each one not read.
func testRefusedFiles(t *testing.T, kinds []refusedFile) {
	for _, k := range kinds {
		for _, place := range refusedPlaces {
			for _, enabled := range []bool{true, false} {
				name := k.name + "/" + place
				if !enabled {
					name += "/project-disabled"
				}
				t.Run(name, func(t *testing.T) {
					w := newWorld(t)
					w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {"user-ok": {"command": "u"}}}`)
					good := w.write("./mcp.json", `{"mcpServers": {"project-ok": {"command": "p"}}}`)
					path := w.path(place)
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					watched := k.make(t, path)
					badOpened := watchOpens(t, watched)
					goodOpened := watchOpens(t, good)
					var d *Discovery
					if enabled {
						d = w.loadWithin()
					} else {
						d = w.loadWithin(noProject)
					}
					project := strings.HasPrefix(place, "./")
					if project && !enabled {
						if len(d.Errors) != 0 {
							t.Errorf("errors = %+v, want none: the file must not be read", d.Errors)
						}
						if diff := cmp.Diff([]string{"user-ok"}, names(d)); diff != "" {
							t.Errorf("servers mismatch (-want +got):\n%s", diff)
						}
						for p, opened := range map[string]func() int{watched: badOpened, good: goodOpened} {
							if opened == nil {
								continue
							}
							if n := opened(); n != 0 {
								t.Errorf("%s was opened %d time(s) with project configs disabled", p, n)
							}
						}
						for _, p := range []string{path, good} {
							want := p + " not read: project-level configs are disabled"
							if !slices.Contains(d.Warnings, want) {
								t.Errorf("warnings = %q, want %q", d.Warnings, want)
							}
						}
						return
					}
					if diff := cmp.Diff([]FileError{{path, path + ": " + k.why}}, d.Errors); diff != "" {
						t.Errorf("errors mismatch (-want +got):\n%s", diff)
					}
					want := []string{"user-ok"}
					if enabled {
						want = append(want, "project-ok")
						if goodOpened != nil && goodOpened() == 0 {
							t.Errorf("the open of %s was not seen: the watch proves nothing", good)
						}
					}
					if diff := cmp.Diff(want, names(d)); diff != "" {
						t.Errorf("servers mismatch (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

func TestRefusesOversizedAndNonRegularFiles(t *testing.T) {
	testRefusedFiles(t, []refusedFile{
		{
			name: "oversized",
			make: func(t *testing.T, path string) string {
				f, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := f.Truncate(4<<20 + 1); err != nil {
					t.Fatal(err)
				}
				return path
			},
			why: "larger than 4 MiB, the limit for a config file",
		},
		{
			name: "directory",
			make: func(t *testing.T, path string) string {
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
				return path
			},
			why: "not a regular file (directory)",
		},
	})
}

// A file of exactly the limit is read.
func TestConfigFileAtSizeLimitLoads(t *testing.T) {
	w := newWorld(t)
	doc := `{"mcpServers": {"big": {"command": "b"}}}`
	w.write("~/.cursor/mcp.json", doc+strings.Repeat(" ", 4<<20-len(doc)))
	d := w.load()
	if len(d.Errors) != 0 || !slices.Equal(names(d), []string{"big"}) {
		t.Errorf("servers %v errors %+v, want big loaded", names(d), d.Errors)
	}
}

// Claude Code keeps its state and prompt history in ~/.claude.json, which
// grows far beyond a hand-written config; it has a limit of its own.
func TestLargeClaudeStateFileLoads(t *testing.T) {
	w := newWorld(t)
	w.write("~/.claude.json", `{"history": "`+strings.Repeat("h", 8<<20)+`", "mcpServers": {"cc": {"command": "c"}}}`)
	d := w.load()
	if len(d.Errors) != 0 || !slices.Equal(names(d), []string{"cc"}) {
		t.Errorf("servers %v errors %+v, want cc loaded", names(d), d.Errors)
	}
}
