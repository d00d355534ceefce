package proc

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
)

// Reap kills with SIGKILL each process of ids that still runs and is
// still the process recorded: the same pid with the same start time. A
// pid now held by another process, or recorded with an unknown start
// time (0), is left alone, and so are this process and its own group.
//
// A recorded process group is killed as a whole too, with all its
// members, when its leader (the process whose pid is the group id) is a
// recorded process that still runs and is still in it, or when that
// leader is gone and a recorded process that still runs is still in it
// (a group outlives its leader, and its id cannot be reused while it
// has members). A group whose leader is some other process is not.
//
// It returns what it signalled, by ascending pid: the recorded processes
// and the other members of the groups it killed, as they were just
// before. It does not wait for them to exit. The error joins the kill
// errors other than "no such process", and reports a /proc that cannot
// be read (then nothing is killed). Elsewhere than on Linux start times
// are unknown, so it kills nothing and returns nil, nil. It reads /proc
// once per call, and is safe to call concurrently.
func Reap(ids []Identity) (killed []Identity, err error) {
	procs := map[int]procStat{}
	if err := eachProc(func(pid int, st procStat, _ os.DirEntry) { procs[pid] = st }); err != nil {
		return nil, fmt.Errorf("reap: %w", err)
	}
	self, selfGroup := os.Getpid(), syscall.Getpgrp()
	// matches reports whether id still runs as recorded.
	matches := func(id Identity) (procStat, bool) {
		st, ok := procs[id.Pid]
		return st, ok && id.Pid > 0 && id.Pid != self && id.StartTime != 0 && st.start == id.StartTime && !st.dead()
	}

	var targets []int // pids to kill one by one
	var groups []int  // groups to kill whole
	for _, id := range ids {
		st, ok := matches(id)
		if !ok {
			continue
		}
		targets = append(targets, id.Pid)
		g := id.Pgid
		if g <= 1 || g == selfGroup || st.pgid != g || slices.Contains(groups, g) {
			continue
		}
		if leader, ok := procs[g]; ok && !leader.dead() {
			// The leader runs: it must be a recorded process itself.
			if !slices.ContainsFunc(ids, func(l Identity) bool {
				lst, ok := matches(l)
				return ok && l.Pid == g && lst.pgid == g
			}) {
				continue
			}
		}
		groups = append(groups, g)
	}

	var errs []error
	signalled := map[int]bool{}
	for _, g := range groups {
		if err := syscall.Kill(-g, syscall.SIGKILL); err != nil {
			if !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("reap: SIGKILL group %d: %w", g, err))
			}
			continue
		}
		for pid, st := range procs {
			if st.pgid == g && !st.dead() && pid != self {
				signalled[pid] = true
			}
		}
	}
	for _, pid := range targets {
		if signalled[pid] {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			if !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("reap: SIGKILL process %d: %w", pid, err))
			}
			continue
		}
		signalled[pid] = true
	}
	for pid := range signalled {
		st := procs[pid]
		killed = append(killed, Identity{Pid: pid, Pgid: st.pgid, StartTime: st.start})
	}
	slices.SortFunc(killed, func(a, b Identity) int { return a.Pid - b.Pid })
	return killed, errors.Join(errs...)
}
