package proc

import (
	"bufio"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestInstanceMarker(t *testing.T) {
	a, b := newInstanceMarker(), newInstanceMarker()
	if !strings.HasPrefix(a, instanceEnv+"=") || len(a) < len(instanceEnv)+21 || a == b {
		t.Fatalf("markers %q, %q", a, b)
	}
}

// TestDescendants starts a server that leaves one process reparented (its
// parent exited) and keeps one as its child, and checks that both are
// found, the first by its instance marker.
//
// The reparented process is a sub-shell that reads the server's stdin
// and runs no program: a process in the middle of exec(2) shows no
// environment for a moment. "done" comes once its parent was waited for.
func TestDescendants(t *testing.T) {
	script := "( read x <&3 >/dev/null 2>&1 & echo $! ) 3<&0; echo done; " +
		"sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; exec cat >/dev/null"
	p, err := Start("sh", []string{"-c", script}, os.Environ(), t.TempDir(), &Options{StdinGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Terminate() })
	out := bufio.NewReader(p.Stdout())
	reparented := readPid(t, out)
	if line, err := out.ReadString('\n'); line != "done\n" {
		t.Fatalf("read %q, %v; want done", line, err)
	}
	child := readPid(t, out)
	if st, _ := readProcStat(reparented.Pid); st.ppid == p.Pid() || st.ppid == 0 {
		t.Fatalf("process %d was not reparented (parent %d)", reparented.Pid, st.ppid)
	}

	got := Descendants(p.Pid())
	for _, want := range []Identity{reparented, child} {
		if !slices.Contains(got, want) {
			t.Errorf("Descendants(%d) = %v, lacks %v", p.Pid(), got, want)
		}
	}
	if slices.ContainsFunc(got, func(id Identity) bool { return id.Pid == p.Pid() }) {
		t.Errorf("Descendants(%d) = %v holds the root", p.Pid(), got)
	}

	// DescendantsOf finds the same in one pass for several roots: the
	// reparented process by the marker of the root Start started.
	many := DescendantsOf([]int{p.Pid(), os.Getpid(), -1})
	for _, want := range []Identity{reparented, child} {
		if !slices.Contains(many[p.Pid()], want) {
			t.Errorf("DescendantsOf(%d) = %v, lacks %v", p.Pid(), many[p.Pid()], want)
		}
	}
	if !slices.Contains(many[os.Getpid()], child) || !slices.Contains(many[os.Getpid()], p.Identity()) {
		t.Errorf("DescendantsOf(self) = %v, lacks %v or %v", many[os.Getpid()], p.Identity(), child)
	}
	if _, ok := many[-1]; ok {
		t.Errorf("DescendantsOf has an entry for a pid that does not run")
	}

	// This process was not started by Start: only parent links count.
	mine := Descendants(os.Getpid())
	for _, want := range []Identity{p.Identity(), child} {
		if !slices.Contains(mine, want) {
			t.Errorf("Descendants of this process = %v, lacks %v", mine, want)
		}
	}
	if slices.Contains(mine, reparented) {
		t.Errorf("Descendants of this process = %v holds %v, which descends from it by no parent link", mine, reparented)
	}

	if err := p.Terminate(); err != nil {
		t.Fatal(err)
	}
	if got := Descendants(p.Pid()); got != nil {
		t.Errorf("Descendants of an exited process = %v, want nil", got)
	}
	if launchedMarker(p.Pid()) != "" {
		t.Errorf("process %d is still registered as launched after it was reaped", p.Pid())
	}
}

// Concurrent findDescendants calls share passes over /proc: while one pass
// runs, the calls that come join the next, and each gets what a pass of
// its own would have found.
func TestConcurrentDescendantsSharePasses(t *testing.T) {
	const n = 6
	var procs []*Process
	var children []Identity
	for range n {
		p, err := Start("sh", []string{"-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; exec cat >/dev/null"}, os.Environ(), t.TempDir(), &Options{StdinGrace: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Terminate() })
		procs = append(procs, p)
		children = append(children, readPid(t, bufio.NewReader(p.Stdout())))
	}
	hold := make(chan struct{})
	var passes []int
	var mu sync.Mutex
	passStarted = func(queries int) {
		mu.Lock()
		passes = append(passes, queries)
		first := len(passes) == 1
		mu.Unlock()
		if first {
			<-hold
		}
	}
	defer func() { passStarted = nil }()
	got := make([][]Identity, n)
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { got[i] = Descendants(p.Pid()) })
	}
	// Hold the first pass until every other call is queued for the next.
	for {
		mu.Lock()
		first := 0
		if len(passes) == 1 {
			first = passes[0]
		}
		mu.Unlock()
		if first > 0 && first+passesQueued() == n {
			break
		}
		runtime.Gosched()
	}
	close(hold)
	wg.Wait()
	sum := 0
	for _, q := range passes {
		sum += q
	}
	if len(passes) > 2 || sum != n {
		t.Errorf("passes over /proc (queries each) = %v, want at most 2 for %d calls", passes, n)
	}
	for i := range procs {
		if !slices.Contains(got[i], children[i]) {
			t.Errorf("Descendants of server %d = %v, lacks its child %v", i, got[i], children[i])
		}
		for j := range procs {
			if j != i && slices.Contains(got[i], children[j]) {
				t.Errorf("Descendants of server %d = %v holds the child of server %d", i, got[i], j)
			}
		}
	}
}

// passesQueued returns how many findDescendants calls wait for the next
// pass.
func passesQueued() int {
	passes.mu.Lock()
	defer passes.mu.Unlock()
	return len(passes.queue)
}
