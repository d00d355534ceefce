//go:build linux

package manager

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/journal"
)

// TestTeardownKillsDescendantsOutsideTheGroup: a server started through
// sh -c leaves two processes outside its process group before it starts:
// one by setsid with a cleared environment (found by its parent link) and
// a double-forked daemon (reparented at once, found by the instance
// marker). Teardown leaves neither running.
func TestTeardownKillsDescendantsOutsideTheGroup(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	mark := "descendant-" + rand.Text()

	// Each escapee writes its pid to a FIFO of its own and the shell reads
	// both before it becomes the server: when the server answers
	// initialize, both run.
	const script = `
dir=$1; shift
mkfifo "$dir/a" "$dir/b"
setsid env -i sh -c 'echo $$ >"$1"; exec sleep 1000' sh "$dir/a" &
(setsid sh -c 'echo $$ >"$1"; exec sleep 1000' sh "$dir/b" &)
read a <"$dir/a"
read b <"$dir/b"
echo "$a $b" >"$dir/pids"
exec "$@"`
	cmd, args := fixturetest.Command(t, "only=echo")
	cfg := events.ServerConfig{
		Name: "daemonising", Command: "sh", Args: append([]string{"-c", script, "sh", dir, cmd}, args...),
		Env: map[string]string{"MCPLIFE_TEST_MARK": mark},
	}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %q: %v", b, err)
		}
		pids = append(pids, pid)
	}
	t.Cleanup(func() {
		for _, pid := range append(pids, marked(mark)...) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if len(pids) != 2 || len(marked(mark)) == 0 {
		t.Fatalf("escapees %v, marked processes %v", pids, marked(mark))
	}
	for _, pid := range pids {
		if !proc.Running(pid) {
			t.Fatalf("escapee %d is not running before the teardown", pid)
		}
		if g, _ := proc.Group(pid); g != pid {
			t.Fatalf("escapee %d is in group %d, not a group of its own", pid, g)
		}
	}

	// Both escapees are recorded, with their start times, for a later
	// process to reap if this one dies: the setsid child by its parent
	// link, the daemon by the instance marker.
	sub, err := e.j.Subscribe(ctx, journal.SubscribeOptions{Session: e.session, FromSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var seen *events.ProcessesSeen
	for seen == nil {
		env, ok := <-sub.C()
		if !ok {
			t.Fatalf("subscription ended: %v", sub.Err())
		}
		if env.Type == events.TypeProcessesSeen {
			ev, _ := events.Decode(env)
			seen = ev.(*events.ProcessesSeen)
		}
	}
	for _, pid := range pids {
		want, _ := proc.IdentityOf(pid)
		if !slices.Contains(seen.Pids, events.ProcessRef{Pid: want.Pid, StartTime: want.StartTime}) {
			t.Errorf("ProcessesSeen %+v lacks escapee %+v", seen, want)
		}
	}

	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if proc.Running(pid) {
			t.Errorf("process %d, outside the server's group, survived the teardown", pid)
		}
	}
	if left := marked(mark); len(left) > 0 {
		t.Errorf("processes with the server's environment survived the teardown: %v", left)
	}
}

// marked returns the running processes whose environment holds
// MCPLIFE_TEST_MARK=mark.
func marked(mark string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && proc.Running(pid) && hasEnvEntry(pid, "MCPLIFE_TEST_MARK="+mark) {
			out = append(out, pid)
		}
	}
	return out
}
