//go:build unix

package pgtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcplife/mcplife/internal/proc"
)

// Freeze stops every process of the server with SIGSTOP, so that its
// connections stay open and hang rather than fail, as behind a network
// partition that never resets them. Thaw (also run at the test's end)
// lets them go on.
func (s *Server) Freeze() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP)
	s.t.Cleanup(s.Thaw)
}

// Thaw resumes a server stopped by Freeze. It is idempotent.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

// signal sends sig to the server's postmaster and every process it started.
func (s *Server) signal(sig syscall.Signal) {
	b, err := os.ReadFile(filepath.Join(s.dir, "postmaster.pid"))
	if err != nil {
		s.t.Fatalf("postmaster.pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		s.t.Fatalf("postmaster.pid: %v", err)
	}
	pids := []int{pid}
	for _, id := range proc.DescendantsOf([]int{pid})[pid] {
		pids = append(pids, id.Pid)
	}
	for _, p := range pids {
		syscall.Kill(p, sig)
	}
}
