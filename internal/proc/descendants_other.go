//go:build !linux

package proc

// Elsewhere than on Linux, teardown reaches the server's process group
// only (on Windows, the process only): there is no /proc to find the
// processes that left it (by setsid, or a daemonising double fork), so
// they survive the teardown.

// newInstanceMarker returns "": no process is marked.
func newInstanceMarker() string { return "" }

// procID is one process; none is ever found.
type procID struct {
	pid   int
	start uint64
}

// running reports false: no process is ever found to be running.
func (procID) running() bool { return false }

// findDescendants finds nothing.
func findDescendants(procID, string) []procID { return nil }

// processID returns pid with no start time.
func processID(pid int) procID { return procID{pid: pid} }
