package events

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestHostIDPerPidNamespace: the default host id of a user on a machine
// differs between PID namespaces (containers with the same host name and
// user), and stays what the user and host name alone give in the
// machine's initial namespace, or where the namespace is unknown, as
// hosts recorded before namespaces were told apart.
func TestHostIDPerPidNamespace(t *testing.T) {
	sum := sha256.Sum256([]byte("alice@box"))
	plain := "h-" + hex.EncodeToString(sum[:6])
	if got := hostID("alice", "box", 0); got != plain {
		t.Errorf("namespace unknown: %q, want %q", got, plain)
	}
	if got := hostID("alice", "box", initialPidNamespace); got != plain {
		t.Errorf("initial namespace: %q, want %q", got, plain)
	}
	a, b := hostID("alice", "box", 4026532178), hostID("alice", "box", 4026532179)
	if a == plain || b == plain || a == b || len(a) != len(plain) {
		t.Errorf("two containers: %q and %q (machine %q), want distinct ids of the same shape", a, b, plain)
	}
	if again := hostID("alice", "box", 4026532178); again != a {
		t.Errorf("one namespace: %q, then %q", a, again)
	}
}

func TestPidNamespace(t *testing.T) {
	ns := PidNamespace()
	if runtime.GOOS != "linux" {
		if ns != 0 {
			t.Errorf("PidNamespace() = %d off Linux, want 0", ns)
		}
		return
	}
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skipf("no /proc/self/ns/pid: %v", err)
	}
	if want := "pid:[" + strconv.FormatUint(ns, 10) + "]"; link != want {
		t.Errorf("PidNamespace() = %d; the link reads %q", ns, link)
	}
}
