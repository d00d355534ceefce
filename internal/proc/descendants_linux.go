package proc

import (
	"bytes"
	"crypto/rand"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

// On Linux, teardown finds the processes a server left outside its process
// group (by setsid, or a daemonising double fork) in two ways, since
// either alone misses some: every process whose parent chain in /proc
// leads to the server's child, which finds those that cleared their
// environment while their parent lives; and every process of this user
// whose environment carries the server's instance marker, which finds
// those already reparented once their parent exited.

// searchesProc reports that teardown searches /proc for descendants.
const searchesProc = true

// instanceEnv names the environment variable that marks every process
// started for one server: the child gets it, with a value unique to the
// server's process, and its descendants inherit it.
const instanceEnv = "MCPLIFE_SERVER_INSTANCE"

// newInstanceMarker returns the environment entry that marks one server's
// processes: instanceEnv=<128 random bits>.
func newInstanceMarker() string {
	return instanceEnv + "=" + rand.Text()
}

// procStat is what is read from /proc/<pid>/stat.
type procStat struct {
	state byte
	ppid  int
	pgid  int
	sid   int
	start uint64 // clock ticks since boot
}

// dead reports whether the process has exited (a zombie has).
func (st procStat) dead() bool { return st.state == 'Z' || st.state == 'X' }

// readProcStat reads /proc/<pid>/stat. It reads with bare system calls:
// teardown reads it for every process on the system, and os.ReadFile
// takes twice as many.
func readProcStat(pid int) (procStat, bool) {
	if pid <= 0 {
		return procStat{}, false
	}
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, false
	}
	var buf [1024]byte // the longest line is about 400 bytes
	n, err := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, false
	}
	b := buf[:n]
	// pid (comm) state ppid pgrp session ... starttime is the 22nd field;
	// comm may contain spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 || len(f[0]) == 0 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	sid, err3 := strconv.Atoi(string(f[3]))
	start, err4 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgid: pgid, sid: sid, start: start}, true
}

// eachProc calls fn with every process in /proc and its stat, in one pass
// over /proc. It returns the error of reading the /proc directory.
func eachProc(fn func(pid int, st procStat, e os.DirEntry)) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(pid); ok {
			fn(pid, st, e)
		}
	}
	return nil
}

// alive reports whether the process id stands for is still that process
// and has not exited (a zombie has).
func alive(id Identity) bool {
	st, ok := readProcStat(id.Pid)
	return ok && st.start == id.StartTime && !st.dead()
}

// Descendants returns the running processes that descend from the
// running process pid, without pid itself: those whose parent links in
// /proc lead to it and, when pid is a child [Start] started, also those
// of this user whose environment carries that child's instance marker,
// which finds descendants already reparented after their parent exited.
// Each is returned with its process group and start time. It returns nil
// when pid does not run or /proc cannot be read; elsewhere than on Linux
// it always does. It reads /proc once per call, and is safe to call
// concurrently.
func Descendants(pid int) []Identity {
	st, ok := readProcStat(pid)
	if !ok || st.dead() {
		return nil
	}
	return findDescendants(Identity{Pid: pid, Pgid: st.pgid, StartTime: st.start}, launchedMarker(pid))
}

// findDescendants returns the running processes, other than root itself,
// that descend from root by their parent links now, or whose environment
// holds the entry marker (of processes of this user only). Only processes
// started no earlier than root are looked at: a descendant cannot be
// older. It returns nil when /proc cannot be read. Concurrent calls
// share passes over /proc: a call that comes while a pass runs joins the
// next one (and the processes of a [Together] teardown wait for one
// another to share one pass).
func findDescendants(root Identity, marker string) []Identity {
	q := &descQuery{root: root, marker: marker, done: make(chan struct{})}
	enqueue(q)
	<-q.done
	return q.out
}

// enqueue queues qs for the next pass over /proc, all in the same one,
// and starts the passes if none runs. Each query's done is closed once
// it was answered.
func enqueue(qs ...*descQuery) {
	passes.mu.Lock()
	passes.queue = append(passes.queue, qs...)
	if !passes.running {
		passes.running = true
		go runPasses()
	}
	passes.mu.Unlock()
}

// passes is the queue of findDescendants calls for the next pass.
var passes struct {
	mu      sync.Mutex
	queue   []*descQuery
	running bool // a runPasses goroutine is draining the queue
}

// runPasses answers the queued queries, one pass over /proc per batch,
// until none is queued.
func runPasses() {
	for {
		passes.mu.Lock()
		batch := passes.queue
		passes.queue = nil
		if len(batch) == 0 {
			passes.running = false
			passes.mu.Unlock()
			return
		}
		passes.mu.Unlock()
		answer(batch)
	}
}

// passStarted, when set (by tests), is called as each pass starts.
var passStarted func(queries int)

// answer runs one pass over /proc for every query of batch: a full one
// ([answerAll]), or, when every query has a snapshot of an earlier pass
// to start from, one that looks at what changed since ([answerSince]).
func answer(batch []*descQuery) {
	if passStarted != nil {
		passStarted(len(batch))
	}
	defer func() {
		for _, q := range batch {
			close(q.done)
		}
	}()
	for _, q := range batch {
		if q.base == nil {
			answerAll(batch)
			return
		}
	}
	answerSince(batch)
}

// procSnapshot is what a pass over /proc saw, for a later pass to look
// again at what may have changed since: the processes it read, and those
// of them that run and are new enough to descend from a root of its
// batch.
type procSnapshot struct {
	seen  map[int]bool
	newer []int
}

// answerAll reads the stat of every process, and the environment only of
// those a query's marker may be in: processes of this user, started no
// earlier than a root with a marker (an older one cannot descend from
// it), and not the roots themselves (a child Start launched, whose own
// marker is not looked for in it). Twenty servers torn down at once are
// twenty roots younger than nearly every process on the machine, so a
// pass reads few environments. Every query gets the pass's snapshot.
func answerAll(batch []*descQuery) {
	markers := map[string]bool{}
	roots := make(map[int]uint64, len(batch)) // pid → start time
	minStart := uint64(math.MaxUint64)        // of the roots with a marker
	for _, q := range batch {
		roots[q.root.Pid] = q.root.StartTime
		if q.marker != "" {
			markers[q.marker] = true
			minStart = min(minStart, q.root.StartTime)
		}
	}
	uid := uint32(os.Getuid())
	stats := map[int]procStat{}
	children := map[int][]int{}         // ppid → pids, exited ones too
	marked := map[int]map[string]bool{} // pid → the markers in its environment
	snap := &procSnapshot{seen: map[int]bool{}}
	err := eachProc(func(pid int, st procStat, e os.DirEntry) {
		stats[pid] = st
		snap.seen[pid] = true
		// An exited parent that was not yet waited for still links its
		// children to the root.
		children[st.ppid] = append(children[st.ppid], pid)
		if len(markers) == 0 || st.dead() || st.start < minStart {
			return
		}
		if isRoot(roots, pid, st) {
			return
		}
		snap.newer = append(snap.newer, pid)
		if info, err := e.Info(); err == nil {
			if s, ok := info.Sys().(*syscall.Stat_t); ok && s.Uid == uid {
				if found := envHolds(pid, markers); len(found) > 0 {
					marked[pid] = found
				}
			}
		}
	})
	if err != nil {
		return
	}
	for _, q := range batch {
		q.snap = snap
		root := q.root
		found := map[int]bool{}
		// Only processes started no earlier than the root are followed:
		// a descendant cannot be older.
		for next := slices.Clone(children[root.Pid]); len(next) > 0; {
			pid := next[len(next)-1]
			next = next[:len(next)-1]
			if pid == root.Pid || found[pid] || stats[pid].start < root.StartTime {
				continue
			}
			found[pid] = true
			next = append(next, children[pid]...)
		}
		if q.marker != "" {
			for pid, ms := range marked {
				if ms[q.marker] && pid != root.Pid && stats[pid].start >= root.StartTime {
					found[pid] = true
				}
			}
		}
		for _, pid := range slices.Sorted(maps.Keys(found)) {
			if st := stats[pid]; !st.dead() {
				q.out = append(q.out, Identity{Pid: pid, Pgid: st.pgid, StartTime: st.start})
			}
		}
	}
}

// isRoot reports whether the process pid, of stat st, is one of roots
// (pid → start time).
func isRoot(roots map[int]uint64, pid int, st procStat) bool {
	start, ok := roots[pid]
	return ok && start == st.start
}

// answerSince answers queries whose root has exited and was waited for,
// so that no parent link leads from it any more: each finds what carries
// its marker, as a full pass would, but reads only the processes its
// snapshot did not see (they started since, or were being created) and
// those it saw that were new enough to descend from the root (one that
// was in the middle of exec(2) showed no environment then). A process the
// snapshot saw older than the root cannot descend from it, and one that
// held the marker then was found then. (A pid the snapshot saw is not
// handed to a new process in the moments between the two passes: Linux
// hands pids out in turn, up to pid_max, before it reuses one.)
func answerSince(batch []*descQuery) {
	f, err := os.Open("/proc")
	if err != nil {
		return
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return
	}
	listed := make(map[int]os.DirEntry, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			listed[pid] = e
		}
	}
	markers := map[string]bool{}
	roots := make(map[int]uint64, len(batch)) // pid → start time
	for _, q := range batch {
		roots[q.root.Pid] = q.root.StartTime
		if q.marker != "" {
			markers[q.marker] = true
		}
	}
	if len(markers) == 0 {
		return
	}
	uid := uint32(os.Getuid())
	type look struct {
		st      procStat
		markers map[string]bool
	}
	looked := map[int]*look{} // nil: gone, exited, a root or not of this user
	lookAt := func(pid int) *look {
		if l, ok := looked[pid]; ok {
			return l
		}
		var l *look
		if st, ok := readProcStat(pid); ok && !st.dead() && !isRoot(roots, pid, st) {
			if info, err := listed[pid].Info(); err == nil {
				if s, ok := info.Sys().(*syscall.Stat_t); ok && s.Uid == uid {
					l = &look{st: st, markers: envHolds(pid, markers)}
				}
			}
		}
		looked[pid] = l
		return l
	}
	for _, q := range batch {
		if q.marker == "" {
			continue
		}
		found := map[int]procStat{}
		check := func(pid int) {
			if l := lookAt(pid); l != nil && l.markers[q.marker] && l.st.start >= q.root.StartTime {
				found[pid] = l.st
			}
		}
		for pid := range listed {
			if !q.base.seen[pid] {
				check(pid)
			}
		}
		for _, pid := range q.base.newer {
			if _, ok := listed[pid]; ok {
				check(pid)
			}
		}
		for _, pid := range slices.Sorted(maps.Keys(found)) {
			st := found[pid]
			q.out = append(q.out, Identity{Pid: pid, Pgid: st.pgid, StartTime: st.start})
		}
	}
}

// IdentityOf returns the identity of the process pid as /proc shows it
// now, and whether there is such a process (a zombie, exited but not yet
// waited for, still is one). Elsewhere than on Linux its StartTime is 0.
func IdentityOf(pid int) (Identity, bool) {
	st, ok := readProcStat(pid)
	if !ok {
		return Identity{}, false
	}
	return Identity{Pid: pid, Pgid: st.pgid, StartTime: st.start}, true
}

// envHolds returns which of entries the environment of pid holds.
func envHolds(pid int, entries map[string]bool) map[string]bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	var found map[string]bool
	for len(env) > 0 {
		kv := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			kv, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if entries[string(kv)] {
			if found == nil {
				found = map[string]bool{}
			}
			found[string(kv)] = true
		}
	}
	return found
}

// hasEnvEntry reports whether the environment pid started with holds
// entry (KEY=VALUE).
func hasEnvEntry(pid int, entry string) bool {
	if entry == "" {
		return false
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for len(env) > 0 {
		kv := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			kv, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if string(kv) == entry {
			return true
		}
	}
	return false
}

// DescendantsOf returns, for each of roots, the running processes that
// descend from it, as [Descendants] finds them: by parent links and, for a
// root that [Start] started, by its instance marker, which finds daemons
// already reparented. It reads /proc once for all of them (and the
// environment of each newer process of this user once), so many servers
// that connect at once share one pass. A root that does not run has no
// entry.
func DescendantsOf(roots []int) map[int][]Identity {
	markers := map[string]int{} // instance marker entry → root
	for _, root := range roots {
		if mk := launchedMarker(root); mk != "" {
			markers[mk] = root
		}
	}
	uid := uint32(os.Getuid())
	children := map[int][]int{}
	stats := map[int]procStat{}
	var mine []int // live processes of this user, for the marker search
	if err := eachProc(func(pid int, st procStat, e os.DirEntry) {
		stats[pid] = st
		children[st.ppid] = append(children[st.ppid], pid)
		if len(markers) == 0 || st.dead() {
			return
		}
		if info, err := e.Info(); err == nil {
			if s, ok := info.Sys().(*syscall.Stat_t); ok && s.Uid == uid {
				mine = append(mine, pid)
			}
		}
	}); err != nil {
		return nil
	}
	found := make(map[int]map[int]bool, len(roots))
	for _, root := range roots {
		rst, ok := stats[root]
		if !ok || rst.dead() {
			continue
		}
		found[root] = map[int]bool{}
		for next := slices.Clone(children[root]); len(next) > 0; {
			pid := next[len(next)-1]
			next = append(next[:len(next)-1], children[pid]...)
			if st := stats[pid]; !st.dead() && st.start >= rst.start {
				found[root][pid] = true
			}
		}
	}
	for _, pid := range mine {
		if _, isRoot := found[pid]; isRoot {
			continue
		}
		for _, entry := range envEntries(pid) {
			root, ok := markers[entry]
			if !ok || found[root] == nil || pid == root {
				continue
			}
			if stats[pid].start >= stats[root].start {
				found[root][pid] = true
			}
		}
	}
	out := make(map[int][]Identity, len(found))
	for root, pids := range found {
		ids := []Identity{}
		for _, pid := range slices.Sorted(maps.Keys(pids)) {
			st := stats[pid]
			ids = append(ids, Identity{Pid: pid, Pgid: st.pgid, StartTime: st.start})
		}
		out[root] = ids
	}
	return out
}

// envEntries returns the environment entries (KEY=VALUE) of pid, or nil
// when it cannot be read.
func envEntries(pid int) []string {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	var out []string
	for len(env) > 0 {
		kv := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			kv, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if bytes.HasPrefix(kv, []byte(instanceEnv+"=")) {
			out = append(out, string(kv))
		}
	}
	return out
}
