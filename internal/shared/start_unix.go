//go:build unix

package shared

import (
	"os/exec"
	"syscall"
)

// detach puts the shared host in a session of its own.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
