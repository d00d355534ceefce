package proc

import (
	"bytes"
	"crypto/rand"
	"os"
	"strconv"
	"syscall"
)

// On Linux, teardown finds the processes a server left outside its process
// group (by setsid, or a daemonising double fork) in two ways, since
// either alone misses some: every process whose parent chain in /proc
// leads to the server's child, which finds those that cleared their
// environment while their parent lives; and every process of this user
// whose environment carries the server's instance marker, which finds
// those already reparented once their parent exited.

// instanceEnv names the environment variable that marks every process
// started for one server: the child gets it, with a value unique to the
// server's process, and its descendants inherit it.
const instanceEnv = "MCPLIFE_SERVER_INSTANCE"

// newInstanceMarker returns the environment entry that marks one server's
// processes: instanceEnv=<128 random bits>.
func newInstanceMarker() string {
	return instanceEnv + "=" + rand.Text()
}

// procID is one process: its pid and its start time (in clock ticks
// since boot), so that a pid reused by another process is not mistaken
// for it.
type procID struct {
	pid   int
	start uint64
}

// procStat is what teardown reads from /proc/<pid>/stat.
type procStat struct {
	state byte
	ppid  int
	start uint64
}

// readProcStat reads /proc/<pid>/stat. It reads with bare system calls:
// teardown reads it for every process on the system, and os.ReadFile
// takes twice as many.
func readProcStat(pid int) (procStat, bool) {
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
	// pid (comm) state ppid pgrp ... starttime is the 22nd field; comm may
	// contain spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 || len(f[0]) == 0 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, start: start}, true
}

// running reports whether the process id stands for is still that
// process and has not exited (a zombie has).
func (id procID) running() bool {
	st, ok := readProcStat(id.pid)
	return ok && st.start == id.start && st.state != 'Z' && st.state != 'X'
}

// findDescendants returns the running processes, other than root itself,
// that descend from root by their parent links now, or whose environment
// holds the entry marker (of processes of this user only). Only processes
// started no earlier than root are looked at: a descendant cannot be
// older. It returns nil when /proc cannot be read.
func findDescendants(root procID, marker string) []procID {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	uid := uint32(os.Getuid())
	type proc struct {
		procID
		ppid int
	}
	var procs []proc
	children := map[int][]int{}
	found := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root.pid {
			continue
		}
		st, ok := readProcStat(pid)
		if !ok || st.start < root.start || st.state == 'Z' || st.state == 'X' {
			continue
		}
		procs = append(procs, proc{procID{pid, st.start}, st.ppid})
		children[st.ppid] = append(children[st.ppid], pid)
		if info, err := e.Info(); err == nil {
			if s, ok := info.Sys().(*syscall.Stat_t); ok && s.Uid == uid && hasEnvEntry(pid, marker) {
				found[pid] = true
			}
		}
	}
	for next := children[root.pid]; len(next) > 0; {
		pid := next[len(next)-1]
		next = append(next[:len(next)-1], children[pid]...)
		found[pid] = true
	}
	var out []procID
	for _, p := range procs {
		if found[p.pid] {
			out = append(out, p.procID)
		}
	}
	return out
}

// processID returns the identity of the running process pid; its start
// time is 0 when /proc cannot tell.
func processID(pid int) procID {
	st, _ := readProcStat(pid)
	return procID{pid, st.start}
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
