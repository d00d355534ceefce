package main

import (
	"os"
	"path/filepath"
)

// rootDirs checks the directories of run's --root flags and makes them
// absolute (a relative one is taken from the directory mcp-audit runs in,
// like any path on its command line). Each must be an existing directory.
func rootDirs(flags []string) ([]string, error) {
	var out []string
	for _, d := range flags {
		if d == "" {
			return nil, usagef("--root: empty directory")
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, usagef("--root %s: %v", d, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, usagef("--root %s: no such directory", d)
		}
		if !fi.IsDir() {
			return nil, usagef("--root %s: not a directory", d)
		}
		out = append(out, abs)
	}
	return out, nil
}
