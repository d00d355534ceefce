//go:build !unix

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// Without process groups (Windows and other non-Unix systems), the child
// runs as a plain process: teardown reaches it alone, and what it started
// survives it.

// ownGroup does nothing: there are no process groups to start cmd in.
func ownGroup(*exec.Cmd) {}

// KillGroupOnCancel bounds the wait for c's output pipes after
// cancellation of its context to a second; cancellation kills c's process
// only, since there are no process groups here. Call it before c starts.
func KillGroupOnCancel(c *exec.Cmd) { c.WaitDelay = time.Second }

// groupOf reports false: there are no process groups.
func groupOf(int) (pgid int, ok bool) { return 0, false }

// exitCode returns the exit code of state.
func exitCode(state *os.ProcessState) int { return state.ExitCode() }

// terminate closes stdin, waits, then kills the child if it still runs.
func (p *Process) terminate() error {
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(p.opts.StdinGrace):
	}
	var err error
	select {
	case <-p.exited:
	default:
		if kerr := p.cmd.Process.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) {
			err = fmt.Errorf("kill process %d: %w", p.pid, kerr)
		}
	}
	<-p.exited
	p.drain()
	return err
}
