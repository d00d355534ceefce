package proc

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel send SIGKILL to cmd's process when the
// thread that started it ends, which for a Go program is when the program
// ends (its runtime ends a thread only with a goroutine that exits while
// locked to it). Call it after ownGroup.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
