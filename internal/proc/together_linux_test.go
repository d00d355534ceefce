package proc

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// escapingServer starts a server that leaves two processes outside its
// group: one in a session of its own with an empty environment, which
// only its parent link leads to, and one reparented once its parent
// exited, which only its instance marker leads to (see TestDescendants).
// It returns the server and the two.
func escapingServer(t *testing.T) (*Process, []Identity) {
	t.Helper()
	script := "setsid env -i sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; " +
		"( read x <&3 >/dev/null 2>&1 & echo $! ) 3<&0; echo done; exec cat >/dev/null"
	p, err := Start("sh", []string{"-c", script}, os.Environ(), t.TempDir(), &Options{StdinGrace: time.Minute, TermGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Terminate() })
	out := bufio.NewReader(p.Stdout())
	linked := readPid(t, out)
	reparented := readPid(t, out)
	if line, err := out.ReadString('\n'); line != "done\n" {
		t.Fatalf("read %q, %v; want done", line, err)
	}
	return p, []Identity{linked, reparented}
}

// holdGathering makes searches of a teardown wait for every member, for
// the length of the test.
func holdGathering(t *testing.T) {
	old := gatherWait
	gatherWait = time.Hour
	t.Cleanup(func() { gatherWait = old })
}

// Servers terminated together share one pass over /proc before their
// stdin closes and one after they exited, and each still finds and stops
// what escaped its group: by parent link before, by marker after.
func TestTogetherSharesPasses(t *testing.T) {
	holdGathering(t)
	const n = 4
	var procs []*Process
	var escaped [][]Identity
	for range n {
		p, e := escapingServer(t)
		procs = append(procs, p)
		escaped = append(escaped, e)
	}
	var mu sync.Mutex
	var passes []int
	passStarted = func(queries int) {
		mu.Lock()
		passes = append(passes, queries)
		mu.Unlock()
	}
	defer func() { passStarted = nil }()

	release := Together(procs)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.Terminate() })
	}
	wg.Wait()
	release()
	release() // idempotent

	if !slices.Equal(passes, []int{n, n}) {
		t.Errorf("passes over /proc (queries each) = %v, want two of %d", passes, n)
	}
	for i := range procs {
		if errs[i] != nil {
			t.Errorf("server %d: Terminate: %v", i, errs[i])
		}
		for _, id := range escaped[i] {
			if err := exitedWithin(id, 10*time.Second); err != nil {
				t.Errorf("server %d: escaped process %v survived its teardown: %v", i, id, err)
			}
		}
	}
}

// A member whose termination does not come holds the others' searches
// until release (or gatherWait), and one that terminated before Together
// is no member.
func TestTogetherRelease(t *testing.T) {
	holdGathering(t)
	early, earlyEscaped := escapingServer(t)
	if err := early.Terminate(); err != nil {
		t.Fatal(err)
	}
	a, aEscaped := escapingServer(t)
	b, _ := escapingServer(t)
	release := Together([]*Process{early, a, b})
	done := make(chan error, 1)
	go func() { done <- a.Terminate() }()
	// a's first search waits for b's.
	for {
		b.mu.Lock()
		tg := b.together
		b.mu.Unlock()
		tg.mu.Lock()
		queued, pending := len(tg.queued), tg.pending
		tg.mu.Unlock()
		if pending != 2 {
			t.Fatalf("%d members pending, want 2 (the early one is no member)", pending)
		}
		if queued == 1 {
			break
		}
		runtime.Gosched()
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("Terminate after release: %v", err)
	}
	if err := b.Terminate(); err != nil {
		t.Fatalf("Terminate of the member left: %v", err)
	}
	for _, id := range append(earlyEscaped, aEscaped...) {
		if err := exitedWithin(id, 10*time.Second); err != nil {
			t.Errorf("escaped process %v survived its teardown: %v", id, err)
		}
	}
}

// A search that starts from the snapshot of one made before the server
// exited finds what carries the server's marker and started since, left
// the server's tree, or was new then, and nothing unmarked.
func TestSearchSinceSnapshot(t *testing.T) {
	dir := t.TempDir()
	fifo := dir + "/fifo"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// On "go" the server leaves a reparented process that waits to open
	// the FIFO (it runs no program, so its environment stays readable).
	script := `read go; ( read x <"$1" >/dev/null 2>&1 & echo $! ); echo done; exec cat >/dev/null`
	p, err := Start("sh", []string{"-c", script, "sh", fifo}, os.Environ(), dir, &Options{StdinGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Terminate() })
	first, snap := p.search(nil)
	if len(first) != 0 || snap == nil {
		t.Fatalf("first search = %v, %v; want nothing and a snapshot", first, snap)
	}
	out := bufio.NewReader(p.Stdout())
	if _, err := p.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	late := readPid(t, out)
	if line, err := out.ReadString('\n'); line != "done\n" {
		t.Fatalf("read %q, %v; want done", line, err)
	}
	unmarked := exec.Command("sleep", "1000")
	if err := unmarked.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmarked.Process.Kill(); unmarked.Wait() })
	p.stdin.Close()
	<-p.Exited()

	got, _ := p.search(snap)
	if !slices.Equal(got, []Identity{late}) {
		t.Errorf("search since the snapshot = %v, want %v alone", got, late)
	}
}
