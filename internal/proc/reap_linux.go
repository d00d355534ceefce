package proc

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"syscall"
)

// Reap kills with SIGKILL the processes a killed host left behind: each
// of ids that still runs and is still the process recorded (the same pid
// with the same start time; a pid now held by another process, or
// recorded with an unknown start time, 0, is left alone), and, with
// opts.Session set, every process of this user whose environment
// carries that session's id ([SessionEnv]), which finds what was never
// recorded, and, with opts.Born, every live member of a group it names
// whose leader is gone and that started in the span given, which finds
// what was never recorded and cleared its environment. A process found
// any of these ways is the session's.
//
// A process group is killed as a whole too, with all its members: the
// group of a process of the session, or a recorded one, when its leader
// (the process whose pid is the group id) is a process of the session,
// or when that leader is gone (exited, or a zombie) and a live member is
// a process of the session. A group id is not reused while the group has
// a member, so such a group is still the one that process is in; a
// recorded group whose leader is gone and that holds no process of the
// session may be another group by now, and is left alone, as is a group
// whose leader runs and is not the session's.
//
// It never signals this process, the processes it descends from (a host
// started from a shell a server left behind keeps its shell), or a group
// any of them is in.
//
// It returns what it signalled, by ascending pid: the processes of the
// session and the other members of the groups it killed, as they were
// just before. It does not wait for them to exit. The error joins the
// kill errors other than "no such process", and reports a /proc that
// cannot be read (then nothing is killed). Elsewhere than on Linux start
// times and environments are unknown, so it kills nothing and returns
// nil, nil. It reads /proc once per call (and the environment of each
// process of this user, when opts.Session is set), and is safe to call
// concurrently. opts nil means no session.
func Reap(ids []Identity, opts *ReapOptions) (killed []Identity, err error) {
	var o ReapOptions
	if opts != nil {
		o = *opts
	}
	entry, err := sessionEntry(o.Session)
	if err != nil {
		return nil, fmt.Errorf("reap: %w", err)
	}
	uid := uint32(os.Getuid())
	procs := map[int]procStat{}
	var mine []int // live processes of this user, for the session's entry
	if err := eachProc(func(pid int, st procStat, e os.DirEntry) {
		procs[pid] = st
		if entry == "" || st.dead() {
			return
		}
		if info, err := e.Info(); err == nil {
			if s, ok := info.Sys().(*syscall.Stat_t); ok && s.Uid == uid {
				mine = append(mine, pid)
			}
		}
	}); err != nil {
		return nil, fmt.Errorf("reap: %w", err)
	}

	// This process and its ancestors, and their groups, are never
	// signalled.
	spared, sparedGroups := map[int]bool{}, map[int]bool{syscall.Getpgrp(): true}
	for pid := os.Getpid(); pid > 0 && !spared[pid]; {
		spared[pid] = true
		st, ok := procs[pid]
		if !ok {
			break
		}
		sparedGroups[st.pgid] = true
		pid = st.ppid
	}

	// ours are the processes of the session that run: recorded ones that
	// still are what was recorded, and those carrying the session's id.
	ours := map[int]bool{}
	for _, id := range ids {
		if st, ok := procs[id.Pid]; ok && id.Pid > 0 && id.StartTime != 0 && st.start == id.StartTime && !st.dead() && !spared[id.Pid] {
			ours[id.Pid] = true
		}
	}
	for _, pid := range mine {
		if !ours[pid] && !spared[pid] && hasEnvEntry(pid, entry) {
			ours[pid] = true
		}
	}
	// And those born, in a span of o.Born, into a recorded group whose
	// leader is gone.
	for _, b := range o.Born {
		if b.Pgid <= 1 || sparedGroups[b.Pgid] {
			continue
		}
		if leader, ok := procs[b.Pgid]; ok && !leader.dead() {
			continue
		}
		for pid, st := range procs {
			if st.pgid == b.Pgid && !st.dead() && !spared[pid] && st.start >= b.From && st.start <= b.To {
				ours[pid] = true
			}
		}
	}

	// The candidate groups: those of the session's processes, and the
	// recorded ones.
	candidates := map[int]bool{}
	for pid := range ours {
		candidates[procs[pid].pgid] = true
	}
	for _, id := range ids {
		candidates[id.Pgid] = true
	}
	var groups []int // groups to kill whole
	for _, g := range slices.Sorted(maps.Keys(candidates)) {
		if g <= 1 || sparedGroups[g] {
			continue
		}
		if leader, ok := procs[g]; ok && !leader.dead() {
			// The leader runs: it must be the session's, and still lead.
			if ours[g] && leader.pgid == g {
				groups = append(groups, g)
			}
			continue
		}
		for pid, st := range procs {
			if st.pgid == g && !st.dead() && ours[pid] {
				groups = append(groups, g)
				break
			}
		}
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
			if st.pgid == g && !st.dead() {
				signalled[pid] = true
			}
		}
	}
	for _, pid := range slices.Sorted(maps.Keys(ours)) {
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
