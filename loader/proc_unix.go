//go:build unix

package loader

import (
	"os/exec"
	"syscall"
	"time"
)

// setProcessGroup starts c in its own process group and makes cancellation
// kill the whole group, so a command that started children (a pipeline, a
// sub-shell) leaves nothing running after a timeout.
func setProcessGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error {
		if c.Process == nil {
			return nil
		}
		return syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	c.WaitDelay = time.Second
}
