package proc

import "sync"

// launched holds the children [Start] launched and has not yet waited
// for, with their instance markers: [Descendants] finds a child's marker
// here.
var (
	launchedMu sync.Mutex
	launched   = map[int]string{} // pid -> instance marker
)

// registerChild records that Start launched pid with marker.
func registerChild(pid int, marker string) {
	launchedMu.Lock()
	defer launchedMu.Unlock()
	launched[pid] = marker
}

// unregisterChild forgets pid once it was waited for, unless a later
// child has its pid by now.
func unregisterChild(pid int, marker string) {
	launchedMu.Lock()
	defer launchedMu.Unlock()
	if m, ok := launched[pid]; ok && m == marker {
		delete(launched, pid)
	}
}

// launchedMarker returns the instance marker of the child pid that Start
// launched and has not yet waited for, or "".
func launchedMarker(pid int) string {
	launchedMu.Lock()
	defer launchedMu.Unlock()
	return launched[pid]
}
