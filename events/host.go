package events

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/user"
	"strconv"
	"sync"
)

// DefaultHost returns the host id recorded on events when none is
// configured: "h-" and the first 12 hex digits of the SHA-256 of the user
// name and the machine's host name. It names a user on a machine without
// publishing either, and is the same for every process they run there.
var DefaultHost = sync.OnceValue(func() string {
	name, _ := os.Hostname()
	who := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	sum := sha256.Sum256([]byte(who + "@" + name))
	return "h-" + hex.EncodeToString(sum[:6])
})
