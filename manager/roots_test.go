package manager

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
)

// rootsOf calls the fixture's roots tool of server and returns the URIs
// the client answered roots/list with (the go-sdk lists them by URI).
func rootsOf(t *testing.T, e *env, server string) []string {
	t.Helper()
	r, err := tool(t, e.m, "mcp_"+server+"_roots").Call(testCtx(t), nil)
	if err != nil || r.Result.IsError {
		t.Fatalf("%s roots: %+v %v", server, r, err)
	}
	var ans struct {
		Roots []struct{ URI, Name string }
	}
	if err := json.Unmarshal(structuredJSON(r), &ans); err != nil {
		t.Fatalf("%s roots: %v (%s)", server, err, structuredJSON(r))
	}
	var uris []string
	for _, root := range ans.Roots {
		uris = append(uris, root.URI)
	}
	return uris
}

// Options.Roots replace the default root (the cwd) for every server, a
// relative one resolved against Cwd; a server's own roots replace those
// for that server alone.
func TestRootsFromOptionsAndConfig(t *testing.T) {
	cwd, outside := t.TempDir(), t.TempDir()
	e := newEnv(t, &Options{Cwd: cwd, Roots: []string{outside, "sub"}})
	own := stdio(t, "own", "only=roots", "roots-on-init")
	own.Roots = []string{"docs", "/srv/data"}
	res, err := e.m.ConnectServers(testCtx(t), []events.ServerConfig{stdio(t, "plain", "only=roots", "roots-on-init"), own}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	want := []string{"file://" + filepath.ToSlash(outside), "file://" + filepath.ToSlash(filepath.Join(cwd, "sub"))}
	slices.Sort(want)
	if got := rootsOf(t, e, "plain"); !slices.Equal(got, want) {
		t.Errorf("plain's roots = %v, want %v", got, want)
	}
	want = []string{"file://" + filepath.ToSlash(filepath.Join(cwd, "docs")), "file:///srv/data"}
	slices.Sort(want)
	if got := rootsOf(t, e, "own"); !slices.Equal(got, want) {
		t.Errorf("own's roots = %v, want %v (its config's)", got, want)
	}
}

// A root is a URI: a path with spaces or '#' is escaped, not cut.
func TestRootURIEscapesPath(t *testing.T) {
	got := fileRoot("/tmp/a dir/#1")
	if got.URI != "file:///tmp/a%20dir/%231" || got.Name != "#1" {
		t.Errorf("fileRoot = %+v", got)
	}
}

// An empty root is refused by New, naming the option and the entry; a
// config's empty root fails its validation, naming the server and field.
func TestEmptyRootRefused(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := New(e.j, "s2", &Options{Roots: []string{"/a", " "}}); err == nil || !strings.Contains(err.Error(), "Roots: entry 1 is empty") {
		t.Errorf("New with an empty root: %v", err)
	}
	cfg := events.ServerConfig{Name: "fs", Command: "x", Roots: []string{""}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `Server "fs": "roots" entry 0 is empty`) {
		t.Errorf("Validate with an empty root: %v", err)
	}
}
