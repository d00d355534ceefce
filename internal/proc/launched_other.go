//go:build !linux

package proc

// Elsewhere than on Linux no process is marked and no child is adopted,
// so the children Start launched need not be known.

// holdStarts does nothing: there is no reaper to hold off.
func holdStarts() (release func()) { return func() {} }

// registerChild does nothing.
func registerChild(int, string) {}

// unregisterChild does nothing.
func unregisterChild(int, string) {}
