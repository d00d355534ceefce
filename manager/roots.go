package manager

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// absRoots returns dirs as clean absolute paths, a relative one resolved
// against cwd. An empty entry is an error naming what (and the entry's
// index), which is where the roots come from.
func absRoots(what string, dirs []string, cwd string) ([]string, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(dirs))
	for i, d := range dirs {
		if strings.TrimSpace(d) == "" {
			return nil, fmt.Errorf("%s: entry %d is empty (want a directory)", what, i)
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(cwd, d)
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", what, dirs[i], err)
		}
		out = append(out, abs)
	}
	return out, nil
}

// rootsFor returns what roots/list answers the server of cfg: the roots
// its config names when it names any (a relative one resolved against
// Options.Cwd), else Options.Roots. An empty entry in the config (which
// validation refuses) is left out.
func (m *Manager) rootsFor(cfg events.ServerConfig) []*mcp.Root {
	dirs := m.opts.Roots
	if len(cfg.Roots) > 0 {
		dirs = make([]string, 0, len(cfg.Roots))
		for _, d := range cfg.Roots {
			if strings.TrimSpace(d) == "" {
				continue
			}
			if !filepath.IsAbs(d) {
				d = filepath.Join(m.opts.Cwd, d)
			}
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	roots := make([]*mcp.Root, len(dirs))
	for i, d := range dirs {
		roots[i] = fileRoot(d)
	}
	return roots
}

// fileRoot returns the root of the absolute directory dir: its file://
// URI, named after its last element.
func fileRoot(dir string) *mcp.Root {
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path: file:///C:/dir
	}
	return &mcp.Root{URI: (&url.URL{Scheme: "file", Path: p}).String(), Name: filepath.Base(dir)}
}
