// Package natstest gives tests a NATS server with JetStream: the one at
// $MCPLIFE_TEST_NATS (default nats://127.0.0.1:4222), or one started in
// the test process. A test that needs the shared server skips without it,
// unless the CI environment variable is set: then it fails, so a CI
// machine without NATS is noticed.
package natstest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// URL returns the address of the shared NATS server, after checking that
// it answers and has JetStream.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("MCPLIFE_TEST_NATS")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	nc, err := nats.Connect(url, nats.Timeout(2*time.Second))
	if err == nil {
		defer nc.Close()
		var js nats.JetStreamContext
		if js, err = nc.JetStream(); err == nil {
			_, err = js.AccountInfo()
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("NATS with JetStream at %s: %v (CI needs it: start it as .ci/run does)", url, err)
		}
		t.Skipf("no NATS with JetStream at %s (set MCPLIFE_TEST_NATS): %v", url, err)
	}
	return url
}

// Topic returns a topic of its own for one test.
func Topic() string {
	var b [6]byte
	rand.Read(b[:])
	return "mcplife.test." + hex.EncodeToString(b[:])
}

// Server is a NATS server with JetStream run by the test process, on a
// fixed port and store directory so that it can be stopped and started
// again as the same server.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
}

// Start starts a server on a free port of 127.0.0.1, with its JetStream
// store in a temporary directory. It is shut down when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, opts: server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
	}}
	s.Restart()
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port // the same port after a restart
	t.Cleanup(s.Stop)
	return s
}

// URL returns the server's address.
func (s *Server) URL() string {
	return fmt.Sprintf("nats://127.0.0.1:%d", s.srv.Addr().(*net.TCPAddr).Port)
}

// Stop shuts the server down and waits until it is gone. Idempotent.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
	}
}

// RestartEmpty starts the stopped server again on its port, with an empty
// JetStream store: a server that came back without its data (a wiped
// volume, a container without persistent storage).
func (s *Server) RestartEmpty() {
	s.t.Helper()
	s.opts.StoreDir = s.t.TempDir()
	s.Restart()
}

// Restart starts the server (again), on its port and with its store.
func (s *Server) Restart() {
	s.t.Helper()
	srv, err := server.NewServer(&s.opts)
	if err != nil {
		s.t.Fatalf("NATS server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		s.t.Fatal("NATS server not ready in 10s")
	}
	s.srv = srv
}
