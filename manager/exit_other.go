//go:build unix && !linux

package manager

// awaitExit returns at once: the caller's wait blocks a thread.
func awaitExit(int) {}
