package events

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
)

// DefaultHost returns the host id recorded on events when none is
// configured: "h-" and the first 12 hex digits of the SHA-256 of the user
// name and the machine's host name and, when this process runs in a PID
// namespace other than the machine's initial one (a container), of that
// namespace too. It names a user on a machine without publishing either,
// and is the same for every process they run there; containers of one
// machine with the same host name and user get distinct ids, since a pid
// of one means nothing in the other.
var DefaultHost = sync.OnceValue(func() string {
	name, _ := os.Hostname()
	who := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	return hostID(who, name, PidNamespace())
})

// initialPidNamespace is the inode of the machine's initial PID namespace
// (the kernel's PROC_PID_INIT_INO), which every process outside a
// container is in.
const initialPidNamespace = 0xEFFFFFFC

// hostID returns the default host id of user who on the machine name in
// the PID namespace pidns (0: unknown). A process in the initial
// namespace, or one whose namespace is unknown, gets the id the user and
// host name alone give, as hosts recorded before namespaces were told
// apart did.
func hostID(who, name string, pidns uint64) string {
	key := who + "@" + name
	if pidns != 0 && pidns != initialPidNamespace {
		key += "/pidns:" + strconv.FormatUint(pidns, 10)
	}
	sum := sha256.Sum256([]byte(key))
	return "h-" + hex.EncodeToString(sum[:6])
}

// PidNamespace returns the inode number of this process's PID namespace
// (the link /proc/self/ns/pid reads "pid:[inode]"), the space in which
// its pids mean something, or 0 where it cannot be read (not Linux).
var PidNamespace = sync.OnceValue(func() uint64 {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0
	}
	s, ok := strings.CutPrefix(link, "pid:[")
	if !ok {
		return 0
	}
	s, ok = strings.CutSuffix(s, "]")
	if !ok {
		return 0
	}
	ino, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return ino
})
