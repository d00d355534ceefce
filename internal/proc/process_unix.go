//go:build unix

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// ownGroup makes cmd start in a process group of its own.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// KillGroupOnCancel starts c in its own process group and makes
// cancellation of its context kill the whole group, so a command that
// started children (a pipeline, a sub-shell) leaves nothing running after
// a timeout. It bounds the wait for c's output pipes after cancellation
// to a second. Call it before c starts.
func KillGroupOnCancel(c *exec.Cmd) {
	ownGroup(c)
	c.Cancel = func() error {
		if c.Process == nil {
			return nil
		}
		return syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	c.WaitDelay = time.Second
}

// exitCode returns the exit code of state, or 128+signal when a signal
// ended the process.
func exitCode(state *os.ProcessState) int {
	code := state.ExitCode()
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return code
}

// terminate closes stdin, waits, then signals the whole group, and every
// descendant that left it, with SIGTERM and, if any remain, SIGKILL.
//
// Descendants outside the group are found as [findDescendants] can on
// this platform (on Linux: by parent links and by the instance marker in
// their environment; elsewhere not at all).
func (p *Process) terminate() error {
	// Look before stdin closes: once the child exits, its children are
	// reparented and only the marker leads to them.
	desc, snap := p.search(nil)
	p.stdin.Close()
	select {
	case <-p.exited:
		// The child was waited for: no parent link leads from it any
		// more, and only what started since the first look, or was new
		// then, can carry its marker unseen.
	case <-time.After(p.opts.StdinGrace):
		snap = nil // the child may still run: look at everything again
	}
	more, _ := p.search(snap)
	desc = addProcs(desc, more)
	var errs []error
	if groupAlive(p.pid) || anyRunning(desc) {
		errs = append(errs, p.signal(syscall.SIGTERM, "SIGTERM", desc)...)
		if !waitGone(p.pid, desc, p.exited, p.opts.TermGrace) {
			more, _ := p.search(nil)
			desc = addProcs(desc, more)
			errs = append(errs, p.signal(syscall.SIGKILL, "SIGKILL", desc)...)
			// Bounded: a process in uninterruptible sleep dies late.
			waitGone(p.pid, desc, p.exited, p.opts.TermGrace)
		}
	}
	<-p.exited // SIGKILL cannot be ignored
	p.drain()
	return errors.Join(errs...)
}

// signal sends sig to the group, if it has a live member, and to each of
// desc that still runs.
func (p *Process) signal(sig syscall.Signal, name string, desc []Identity) []error {
	var errs []error
	if groupAlive(p.pid) {
		if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("%s group %d: %w", name, p.pid, err))
		}
	}
	for _, d := range desc {
		if !alive(d) {
			continue
		}
		if err := syscall.Kill(d.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("%s process %d: %w", name, d.Pid, err))
		}
	}
	return errs
}

// addProcs returns procs with those of more it lacks (by pid and start
// time).
func addProcs(procs, more []Identity) []Identity {
	for _, m := range more {
		if !slices.ContainsFunc(procs, func(p Identity) bool { return p.Pid == m.Pid && p.StartTime == m.StartTime }) {
			procs = append(procs, m)
		}
	}
	return procs
}

// anyRunning reports whether a process of procs still runs.
func anyRunning(procs []Identity) bool {
	return slices.ContainsFunc(procs, alive)
}

// waitGone waits until the child was reaped, no live member of the group
// remains and none of desc runs, or until limit passed. It reports
// whether all are gone.
func waitGone(pgid int, desc []Identity, exited <-chan struct{}, limit time.Duration) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			if !groupAlive(pgid) && !anyRunning(desc) {
				return true
			}
		default:
		}
		select {
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}

// groupAlive reports whether the process group has a member that is not a
// zombie. Zombies count as gone: they run nothing, and in containers whose
// init does not reap, orphans stay zombies forever.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err != nil {
		return errors.Is(err, syscall.EPERM)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: trust kill(2)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, state, ok := procGroup(pid); ok && g == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// Running reports whether pid runs: it exists and is not a zombie. Where
// there is no /proc (not Linux) it reports false.
func Running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	_, state, ok := procGroup(pid)
	return ok && state != 'Z' && state != 'X'
}

// Group returns the process group of pid, read from /proc.
func Group(pid int) (pgid int, ok bool) {
	g, _, ok := procGroup(pid)
	return g, ok
}

// groupOf returns the process group of pid, asked of the kernel.
func groupOf(pid int) (pgid int, ok bool) {
	g, err := syscall.Getpgid(pid)
	return g, err == nil
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
