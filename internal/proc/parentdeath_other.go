//go:build !linux

package proc

import "os/exec"

// dieWithParent does nothing: the parent-death signal is used on Linux
// only, so elsewhere a child outlives a host that is killed.
func dieWithParent(*exec.Cmd) {}
