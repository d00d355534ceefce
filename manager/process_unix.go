//go:build unix

package manager

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Teardown timings of stdio servers. Variables, not constants, so tests of
// the signal path need not wait for the defaults.
var (
	// stdinGrace is how long a server may take to exit after its stdin was
	// closed before its process group receives SIGTERM.
	stdinGrace = 2 * time.Second
	// termGrace is how long the group may take to exit after SIGTERM
	// before it receives SIGKILL.
	termGrace = 2 * time.Second
	// groupPoll is the interval at which a signalled group is checked.
	groupPoll = 10 * time.Millisecond
	// stderrDrain bounds the wait for the last stderr bytes once the group
	// is gone.
	stderrDrain = time.Second
)

// process is one stdio server: a child process started in its own process
// group, its stdin and stdout pipes, and a ring buffer of its stderr.
//
// It owns two goroutines: one reaps the child (closing exited), one copies
// stderr into the ring buffer (closing stderrDone). terminate stops both.
type process struct {
	cmd    *exec.Cmd
	pgid   int
	stdin  *os.File // our write end of the child's stdin
	stdout *os.File // our read end of the child's stdout
	stderr *ringBuffer

	stderrR    *os.File
	stderrDone chan struct{}
	exited     chan struct{} // closed once the child was reaped
	state      *os.ProcessState

	// marker is the environment entry that marks the processes started
	// for this server ("" where teardown does not look for them); root
	// is the child, whose descendants teardown looks for.
	marker string
	root   procID

	once    sync.Once
	termErr error
}

// startProcess starts command with args in dir, with env and the
// server's instance marker as its complete environment, in a new process
// group.
func startProcess(command string, args []string, env []string, dir string) (*process, error) {
	marker := newInstanceMarker()
	if marker != "" {
		env = append(env[:len(env):len(env)], marker) // the last entry of a name wins
	}
	cmd := exec.Command(command, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	// The child holds its ends now.
	inR.Close()
	outW.Close()
	errW.Close()

	p := &process{
		cmd:        cmd,
		pgid:       cmd.Process.Pid,
		stdin:      inW,
		stdout:     outR,
		stderr:     newRingBuffer(stderrLimit),
		stderrR:    errR,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
		marker:     marker,
		root:       processID(cmd.Process.Pid),
	}
	go func() {
		defer close(p.stderrDone)
		buf := make([]byte, 4096)
		for {
			n, err := errR.Read(buf)
			p.stderr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() {
		// Park until the child exits without holding a thread where the
		// kernel allows it: twenty servers starting at once would
		// otherwise block twenty threads in wait4 and slow the startup.
		awaitExit(p.pgid)
		cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
}

// Pid returns the child's process id (also its process group id).
func (p *process) Pid() int { return p.pgid }

// exitStatus returns the child's exit status once it was reaped: its exit
// code, or 128+signal when a signal ended it. It returns nil while the
// child runs.
func (p *process) exitStatus() *int {
	select {
	case <-p.exited:
	default:
		return nil
	}
	if p.state == nil {
		return nil
	}
	code := p.state.ExitCode()
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return &code
}

// stderrTail returns the kept stderr, trimmed.
func (p *process) stderrTail() string {
	return string(bytes.TrimSpace(p.stderr.Bytes()))
}

// terminate shuts the server down: close stdin, wait briefly, then signal
// the whole group, and every descendant that left it, with SIGTERM and, if
// any remain, SIGKILL. It waits for the child to be reaped and for stderr
// to drain. It is idempotent and safe to call concurrently; every caller
// gets the same result.
//
// Descendants outside the group are found as [findDescendants] can on
// this platform (on Linux: by parent links and by the instance marker in
// their environment; elsewhere not at all).
func (p *process) terminate() error {
	p.once.Do(func() { p.termErr = p.doTerminate() })
	return p.termErr
}

func (p *process) doTerminate() error {
	// Look before stdin closes: once the child exits, its children are
	// reparented and only the marker leads to them.
	desc := findDescendants(p.root, p.marker)
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(stdinGrace):
	}
	desc = addProcs(desc, findDescendants(p.root, p.marker))
	var errs []error
	if groupAlive(p.pgid) || anyRunning(desc) {
		errs = append(errs, p.signal(syscall.SIGTERM, "SIGTERM", desc)...)
		if !waitGone(p.pgid, desc, p.exited, termGrace) {
			desc = addProcs(desc, findDescendants(p.root, p.marker))
			errs = append(errs, p.signal(syscall.SIGKILL, "SIGKILL", desc)...)
			// Bounded: a process in uninterruptible sleep dies late.
			waitGone(p.pgid, desc, p.exited, termGrace)
		}
	}
	<-p.exited // SIGKILL cannot be ignored
	select {
	case <-p.stderrDone:
	case <-time.After(stderrDrain):
		// A process that escaped teardown still holds stderr; stop reading.
	}
	p.stderrR.Close()
	<-p.stderrDone
	p.stdout.Close()
	return errors.Join(errs...)
}

// signal sends sig to the group, if it has a live member, and to each of
// desc that still runs.
func (p *process) signal(sig syscall.Signal, name string, desc []procID) []error {
	var errs []error
	if groupAlive(p.pgid) {
		if err := syscall.Kill(-p.pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("%s group %d: %w", name, p.pgid, err))
		}
	}
	for _, d := range desc {
		if !d.running() {
			continue
		}
		if err := syscall.Kill(d.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("%s process %d: %w", name, d.pid, err))
		}
	}
	return errs
}

// addProcs returns procs with those of more it lacks.
func addProcs(procs, more []procID) []procID {
	for _, m := range more {
		if !slices.Contains(procs, m) {
			procs = append(procs, m)
		}
	}
	return procs
}

// anyRunning reports whether a process of procs still runs.
func anyRunning(procs []procID) bool {
	return slices.ContainsFunc(procs, procID.running)
}

// waitGone waits until the child was reaped, no live member of the group
// remains and none of desc runs, or until limit passed. It reports
// whether all are gone.
func waitGone(pgid int, desc []procID, exited <-chan struct{}, limit time.Duration) bool {
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
