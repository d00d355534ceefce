package proc

import "sync"

// launched holds the children [Start] launched and has not yet waited
// for, with their instance markers: [Descendants] finds a child's marker
// here, and [ReapAdopted] leaves these children to the waiter of their
// Process. startMu is held for reading from before a child is forked
// until it is registered, and for writing while ReapAdopted looks and
// waits, so that ReapAdopted never sees a child of Start unregistered.
var (
	startMu sync.RWMutex

	launchedMu sync.Mutex
	launched   = map[int]string{} // pid -> instance marker
)

// holdStarts keeps [ReapAdopted] from looking until release is called.
func holdStarts() (release func()) {
	startMu.RLock()
	return startMu.RUnlock
}

// registerChild records that Start launched pid with marker. Call it
// between holdStarts and its release.
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

// isLaunched reports whether Start launched pid and has not yet waited
// for it.
func isLaunched(pid int) bool {
	launchedMu.Lock()
	defer launchedMu.Unlock()
	_, ok := launched[pid]
	return ok
}
