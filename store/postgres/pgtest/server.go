package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// Server is a PostgreSQL server of the test's own, in a temporary data
// directory on a free port of 127.0.0.1, that the test may stop and start
// again: for the faults the machine's shared server must not suffer. It
// runs the machine's PostgreSQL binaries (as the postgres user when the
// test runs as root, which initdb refuses).
type Server struct {
	t    testing.TB
	dir  string
	port int
	as   []string // the command prefix that runs a binary as the owner
	bin  string
}

// StartServer creates and starts a server; it is stopped and removed when
// the test ends. It skips t (or fails it, when CI is "true") when the
// PostgreSQL binaries are missing.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		msg := "no PostgreSQL binaries (/usr/lib/postgresql/*/bin) to run a server of the test's own"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &Server{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "mcplife-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = filepath.Join(dir, "data")
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user for initdb: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.as = []string{"runuser", "-u", "postgres", "--"}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	s.run("initdb", "-D", s.dir, "-A", "trust", "-U", "root", "--no-sync", "-E", "UTF8")
	s.Start()
	t.Cleanup(s.Stop)
	s.run("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "root", "test")
	return s
}

// ConnString returns the connection string of the server's database test.
func (s *Server) ConnString() string {
	return fmt.Sprintf("postgres://root@127.0.0.1:%d/test?sslmode=disable", s.port)
}

// Start starts the server and waits until it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	s.run("pg_ctl", "-D", s.dir, "-w", "-l", filepath.Join(filepath.Dir(s.dir), "log"),
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.port, filepath.Dir(s.dir)), "start")
}

// Stop stops the server (fast shutdown: open connections are closed) and
// waits until it is gone. It is idempotent.
func (s *Server) Stop() {
	s.t.Helper()
	cmd := s.cmd("pg_ctl", "-D", s.dir, "-w", "-m", "fast", "stop")
	cmd.Run() // stopping a stopped server fails harmlessly
}

func (s *Server) cmd(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, s.as...), filepath.Join(s.bin, name)), args...)
	return exec.Command(argv[0], argv[1:]...)
}

func (s *Server) run(name string, args ...string) {
	s.t.Helper()
	if out, err := s.cmd(name, args...).CombinedOutput(); err != nil {
		s.t.Fatalf("%s: %v\n%s", name, err, out)
	}
}
