//go:build unix

package manager

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// The teardown tests look at processes through /proc; where there is none
// (not Linux), alive reports false and the group and environment are
// unknown.

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	_, state, ok := procGroup(pid)
	return ok && state != 'Z' && state != 'X'
}

// procGroup reads the process group and state of pid from /proc.
func procGroup(pid int) (pgid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may contain spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 3 || len(f[0]) == 0 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return g, f[0][0], true
}

// hasEnvEntry reports whether the environment pid started with holds
// entry (KEY=VALUE).
func hasEnvEntry(pid int, entry string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if string(kv) == entry {
			return true
		}
	}
	return false
}
