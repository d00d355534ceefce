package shared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childSocket, set in a test binary's environment, makes it attach to the
// shared host on that socket and exit: 0 attached, 3 refused.
const childSocket = "MCPLIFE_SHARED_TEST_ATTACH"

// testDeadline bounds every wait of these tests, so that a failure fails
// instead of hanging until the test binary's timeout.
const testDeadline = 2 * time.Minute

// testCtx is the test's context, ending testDeadline after this call.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testDeadline)
	t.Cleanup(cancel)
	return ctx
}

func TestMain(m *testing.M) {
	if sock := os.Getenv(childSocket); sock != "" {
		ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
		c, err := Dial(ctx, sock, Hello{Session: "intruder", Pid: os.Getpid()})
		cancel()
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveWelcome serves a minimal control stream on l until the test ends.
func serveWelcome(t *testing.T, sock string) {
	t.Helper()
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathHosts, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		json.NewEncoder(w).Encode(Welcome{Host: "h1"})
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

func TestSocketModes(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", SocketName)
	serveWelcome(t, sock)
	for path, want := range map[string]os.FileMode{filepath.Dir(sock): 0o700, sock: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
	c, err := Dial(testCtx(t), sock, Hello{Session: "s", Pid: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Welcome().Host != "h1" {
		t.Errorf("welcome %+v", c.Welcome())
	}
	c.Close()
}

func TestListenReplacesStaleSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), SocketName)
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	// A shared host killed leaves its socket file behind.
	l.(*peerListener).Listener.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the stale socket is not there: %v", err)
	}
	if _, err := Dial(testCtx(t), sock, Hello{}); !errors.Is(err, ErrNoSharedHost) {
		t.Fatalf("dial of a stale socket: %v, want ErrNoSharedHost", err)
	}
	serveWelcome(t, sock)
	if _, err := Listen(sock); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Listen: %v, want ErrRunning", err)
	}
}

func TestTwoListenersEndWithOne(t *testing.T) {
	sock := filepath.Join(t.TempDir(), SocketName)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			l, err := Listen(sock)
			errs[i] = err
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
		})
	}
	wg.Wait()
	listening := 0
	for _, err := range errs {
		switch {
		case err == nil:
			listening++
		case !errors.Is(err, ErrRunning):
			t.Errorf("Listen: %v", err)
		}
	}
	if listening != 1 {
		t.Fatalf("%d listeners, want 1 (%v)", listening, errs)
	}
}

// TestAnotherUserIsRefused attaches from a process of another uid, with
// the socket's directory and the socket opened to everyone so that only
// the peer check stands in its way.
func TestAnotherUserIsRefused(t *testing.T) {
	if runtime.GOOS != "linux" || os.Getuid() != 0 {
		t.Skip("needs root on Linux to start a process of another uid")
	}
	dir, err := os.MkdirTemp("", "shared-peer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "run", SocketName)
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan int, 1)
	OnRefused(l, func(uid int, err error) { refused <- uid })
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathHosts, func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(Welcome{Host: "h1"})
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	// The child runs a copy of this test binary that the other user can
	// reach.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "child")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Dir(sock)} {
		os.Chmod(p, 0o755)
	}
	os.Chmod(sock, 0o666)
	cmd := exec.CommandContext(testCtx(t), bin)
	cmd.Env = append(os.Environ(), childSocket+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), "403") {
		t.Fatalf("attach as uid 65534: %v, output %q: want it refused with 403", err, out)
	}
	select {
	case uid := <-refused:
		if uid != 65534 {
			t.Errorf("refused peer uid %d, want 65534", uid)
		}
	case <-time.After(testDeadline):
		t.Fatal("the refusal was never reported")
	}
	// The owner still attaches.
	c, err := Dial(testCtx(t), sock, Hello{Session: "owner"})
	if err != nil {
		t.Fatalf("the owner: %v", err)
	}
	c.Close()
}
