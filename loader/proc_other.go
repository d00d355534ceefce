//go:build !unix

package loader

import (
	"os/exec"
	"time"
)

// setProcessGroup bounds how long c's output pipes are awaited after
// cancellation; process groups are a Unix notion.
func setProcessGroup(c *exec.Cmd) { c.WaitDelay = time.Second }
