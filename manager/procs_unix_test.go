//go:build unix

package manager

import (
	"bytes"
	"os"
	"strconv"
)

// The teardown tests look at processes through /proc; where there is none
// (not Linux), alive reports false and the group and environment are
// unknown.

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
