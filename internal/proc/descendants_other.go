//go:build !linux

package proc

// Elsewhere than on Linux, teardown reaches the server's process group
// only (on Windows, the process only): there is no /proc to find the
// processes that left it (by setsid, or a daemonising double fork), so
// they survive the teardown.

// searchesProc reports that teardown does not search for descendants.
const searchesProc = false

// newInstanceMarker returns "": no process is marked.
func newInstanceMarker() string { return "" }

// alive reports false: no process is ever found to be running.
func alive(Identity) bool { return false }

// findDescendants finds nothing.
func findDescendants(Identity, string) []Identity { return nil }

// procSnapshot is empty: there is no /proc to see.
type procSnapshot struct{}

// enqueue answers qs at once: nothing descends from anything.
func enqueue(qs ...*descQuery) {
	for _, q := range qs {
		close(q.done)
	}
}

// Descendants returns nil: there is no /proc to find them in.
func Descendants(pid int) []Identity { return nil }

// IdentityOf returns the pid and process group of the process pid, with
// StartTime 0 (unknown), and whether there is such a process. On Windows
// it always reports false.
func IdentityOf(pid int) (Identity, bool) {
	if pid <= 0 {
		return Identity{}, false
	}
	pgid, ok := groupOf(pid)
	if !ok {
		return Identity{}, false
	}
	return Identity{Pid: pid, Pgid: pgid}, true
}

// DescendantsOf returns nil: there is no /proc to find them in.
func DescendantsOf(roots []int) map[int][]Identity { return nil }
