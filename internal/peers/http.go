package peers

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/proc"
)

// Modes of server-everything's HTTP transports, as its first argument.
const (
	ModeStreamableHTTP = "streamableHttp"
	ModeSSE            = "sse"
)

// StartupTimeout bounds how long [StartEverythingHTTP] waits for the server
// to accept connections.
const StartupTimeout = 30 * time.Second

// StartEverythingHTTP starts server-everything in mode ([ModeStreamableHTTP]
// or [ModeSSE]) on a free local port, waits until the port accepts TCP
// connections, and returns the endpoint URL (…/mcp or …/sse). The server
// runs in its own process group, which is killed when t ends (on Windows,
// without process groups, the node process alone is killed). It fails the
// test when the server exits or is not ready within [StartupTimeout]; the
// failure includes the server's stderr.
func StartEverythingHTTP(t testing.TB, mode string) (url string) {
	t.Helper()
	var path string
	switch mode {
	case ModeStreamableHTTP:
		path = "/mcp"
	case ModeSSE:
		path = "/sse"
	default:
		t.Fatalf("peers: unknown server-everything mode %q (want %q or %q)", mode, ModeStreamableHTTP, ModeSSE)
	}
	node, script := Everything(t)
	port, err := freePort()
	if err != nil {
		t.Fatalf("peers: %v", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	ctx, kill := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, script, mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	proc.KillGroupOnCancel(cmd)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		kill()
		t.Fatalf("peers: start server-everything %s: %v", mode, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		kill()
		<-exited
	})

	deadline := time.Now().Add(StartupTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return "http://" + addr + path
		}
		if time.Now().After(deadline) {
			t.Fatalf("peers: server-everything %s not accepting on %s after %v: %v\nstderr:\n%s", mode, addr, StartupTimeout, err, stderr.String())
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("peers: server-everything %s exited before accepting on %s: %v\nstderr:\n%s", mode, addr, err, stderr.String())
		case <-tick.C:
		}
	}
}

// freePort asks the kernel for a free TCP port on the loopback interface.
// Another process could take it before the server binds; the server then
// exits with "already in use", which StartEverythingHTTP reports.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer is a bytes.Buffer that exec may write to while a test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
