package loader

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
)

// world is a fake home directory and project directory under t.TempDir().
type world struct {
	t    *testing.T
	home string
	proj string
	env  map[string]string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{t: t, home: filepath.Join(root, "home"), proj: filepath.Join(root, "work", "proj"), env: map[string]string{}}
	for _, d := range []string{w.home, w.proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// write writes a file; path starts with "~/" (home) or "./" (project).
// In content, {{PROJ}} and {{HOME}} stand for the two directories.
func (w *world) write(path, content string) string {
	w.t.Helper()
	full := w.path(path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		w.t.Fatal(err)
	}
	content = strings.NewReplacer("{{PROJ}}", w.proj, "{{HOME}}", w.home).Replace(content)
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return full
}

func (w *world) path(p string) string {
	switch {
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(w.home, p[2:])
	case strings.HasPrefix(p, "./"):
		return filepath.Join(w.proj, p[2:])
	}
	w.t.Fatalf("bad path %q", p)
	return ""
}

func (w *world) opts() Options {
	return Options{Cwd: w.proj, Home: w.home, Env: w.env, GOOS: "linux"}
}

func (w *world) load(mod ...func(*Options)) *Discovery {
	w.t.Helper()
	o := w.opts()
	for _, m := range mod {
		m(&o)
	}
	d, err := LoadConfigs(context.Background(), o)
	if err != nil {
		w.t.Fatalf("LoadConfigs: %v", err)
	}
	return d
}

func (w *world) src(provider, path, level string) events.SourceMeta {
	for _, p := range providerTable {
		if p.ID == provider {
			return events.SourceMeta{Provider: p.ID, ProviderName: p.Name, Path: w.path(path), Level: level}
		}
	}
	w.t.Fatalf("unknown provider %q", provider)
	return events.SourceMeta{}
}

func noProject(o *Options) { o.DisableProjectConfig = true }

func ms(v int64) *int64 { return &v }

// skipView is the comparable part of a Skipped.
type skipView struct {
	Name, Reason, Detail string
}

func skips(d *Discovery) []skipView {
	var out []skipView
	for _, s := range d.Skipped {
		out = append(out, skipView{s.Name, string(s.Reason), s.Detail})
	}
	return out
}

func names(d *Discovery) []string {
	var out []string
	for _, s := range d.Servers {
		out = append(out, s.Config.Name)
	}
	return out
}
