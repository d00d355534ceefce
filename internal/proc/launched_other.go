//go:build !linux

package proc

// Elsewhere than on Linux no process is marked, so no marker needs to be
// known.

// registerChild does nothing.
func registerChild(int, string) {}

// unregisterChild does nothing.
func unregisterChild(int, string) {}
