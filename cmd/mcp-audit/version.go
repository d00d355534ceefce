package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// versionJSON is `version --json`.
type versionJSON struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildVersion reads the module version and the VCS stamp from the
// binary's build information: "(devel)" for a build from a checkout
// without a module version.
func buildVersion() versionJSON {
	v := versionJSON{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// runVersion is `version` (and the global --version).
func runVersion(_ context.Context, g *globals, args []string) error {
	fs := newFlagSet("version", g)
	if pos, err := parseInterleaved(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("version takes no arguments")
	}
	v := buildVersion()
	if g.json {
		return g.writeJSON(v)
	}
	line := "mcp-audit " + v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += " (" + rev
		if v.Time != "" {
			line += ", " + v.Time
		}
		if v.Modified {
			line += ", modified"
		}
		line += ")"
	}
	_, err := fmt.Fprintf(g.stdout, "%s %s %s\n", line, v.Go, v.Platform)
	return err
}
