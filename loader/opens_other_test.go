//go:build !linux

package loader

import "testing"

// watchOpens returns nil: only Linux tests watch opens (through inotify),
// so elsewhere the tests cannot prove a file was left unopened.
func watchOpens(t *testing.T, path string) func() int { return nil }
