package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv switches the test binary into one of the helper processes of
// helpers, for tests that need a process of their own to kill or to turn
// into a subreaper.
const helperEnv = "MCPLIFE_PROC_TEST_HELPER"

// helpers are the helper processes, by the value of helperEnv; the test
// files that use them add them. Each writes its report to stdout and
// returns an error when a check fails.
var helpers = map[string]func() error{}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		os.Unsetenv(helperEnv)
		help, ok := helpers[name]
		if !ok {
			fmt.Println("FAIL: no helper", name)
			os.Exit(2)
		}
		if err := help(); err != nil {
			fmt.Println("FAIL:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startHelper starts the helper process name with its stdin and stdout on
// pipes; closing stdin tells a helper that waits for it to exit.
func startHelper(t *testing.T, name string) (cmd *exec.Cmd, stdin *os.File, stdout *bufio.Reader) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	// Under the race detector a process sleeps a second as it exits
	// unless told not to.
	cmd.Env = append(os.Environ(), helperEnv+"="+name, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, in.(*os.File), bufio.NewReader(out)
}

// waitExit waits until the process id stands for has exited (it may stay
// a zombie) or limit passed, and reports whether it exited. A pid already
// gone, or held by another process, counts as exited.
func waitExit(t *testing.T, id Identity, limit time.Duration) bool {
	t.Helper()
	if err := exitedWithin(id, limit); err != nil {
		t.Log(err)
		return false
	}
	return true
}

// exitedWithin is waitExit for helper processes, which have no
// *testing.T: it returns why the process was not seen to exit.
func exitedWithin(id Identity, limit time.Duration) error {
	f, err := openPidfd(id.Pid)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if !alive(id) { // looked at while the pidfd holds the pid
		return nil
	}
	if err := f.SetReadDeadline(time.Now().Add(limit)); err != nil {
		return err
	}
	if err := awaitPidfd(f); err != nil {
		return fmt.Errorf("process %d: %w", id.Pid, err)
	}
	return nil
}

// killOnCleanup makes sure the process id stands for does not outlive the
// test, whatever the test found.
func killOnCleanup(t *testing.T, id Identity) {
	t.Cleanup(func() {
		if alive(id) {
			syscall.Kill(id.Pid, syscall.SIGKILL)
		}
	})
}

// readPid reads a line holding a pid from r and returns the identity of
// that process.
func readPid(t *testing.T, r *bufio.Reader) Identity {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read pid: %v (read %q)", err, line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	id, ok := IdentityOf(pid)
	if !ok {
		t.Fatalf("process %d is gone", pid)
	}
	killOnCleanup(t, id)
	return id
}
