package proc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/mcplife/mcplife/internal/rawio"
)

// Default teardown timings of [Options].
const (
	// DefaultStdinGrace is how long a process may take to exit after its
	// stdin was closed before it is signalled.
	DefaultStdinGrace = 2 * time.Second
	// DefaultTermGrace is how long a process group may take to exit after
	// SIGTERM before it receives SIGKILL.
	DefaultTermGrace = 2 * time.Second
)

// Teardown timings that are not options.
const (
	// groupPoll is the interval at which a signalled group is checked.
	groupPoll = 10 * time.Millisecond
	// stderrDrain bounds the wait for the last stderr bytes once the group
	// is gone.
	stderrDrain = time.Second
)

// Options configure [Start]. Zero fields mean defaults.
type Options struct {
	// StdinGrace is how long the process may take to exit after its stdin
	// was closed before it is signalled (default [DefaultStdinGrace]).
	StdinGrace time.Duration
	// TermGrace is how long the process group may take to exit after
	// SIGTERM before it receives SIGKILL (default [DefaultTermGrace]).
	// Unused where there are no signals (Windows).
	TermGrace time.Duration
	// Session is the id of the session the process is started for (""
	// for none): the child and what it starts carry it in their
	// environment as [SessionEnv], on every platform, and on Linux
	// [Reap] finds them by it.
	Session string
}

// Process is one stdio server's child process: started in its own process
// group (on Unix), with its stdin and stdout on pipes and the last 64 KiB
// of its stderr kept in a [Ring].
//
// It owns two goroutines: one reaps the child (closing Exited), one copies
// stderr into the ring. [Process.Terminate] stops both. Its methods are
// safe for concurrent use.
type Process struct {
	cmd    *exec.Cmd
	pid    int      // also the process group id on Unix
	stdin  *os.File // our write end of the child's stdin
	stdout *os.File // our read end of the child's stdout
	// stdinW and stdoutR write and read them (package rawio).
	stdinW  io.Writer
	stdoutR io.Reader
	stderr  *Ring
	opts    Options

	stderrR    *os.File
	stderrDone chan struct{}
	exited     chan struct{} // closed once the child was reaped
	state      *os.ProcessState

	// marker is the environment entry that marks the processes started
	// for this server ("" where teardown does not look for them); id is
	// the child's identity, taken right after it started, whose
	// descendants teardown looks for.
	marker string
	id     Identity

	once    sync.Once
	termErr error

	// afterExit holds the functions AfterExit registered before the
	// child exited (mu); exitRan is set once the reaper ran them.
	mu        sync.Mutex
	afterExit []func()
	exitRan   bool
	// together is the teardown the process terminates with ([Together]),
	// if any; terminated is set once its termination finished (mu).
	together   *teardown
	terminated bool
}

// Start starts command with args in dir, with env (and, on Linux, the
// server's instance marker; for a session, [SessionEnv]) as its complete
// environment, in a new process group where the platform has them. On
// Linux the child also gets SIGKILL when this process dies, however it
// dies. opts nil means defaults. It fails for a session id that an
// environment cannot hold (one with a NUL byte).
func Start(command string, args []string, env []string, dir string, opts *Options) (*Process, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	session, err := sessionEntry(o.Session)
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", command, err)
	}
	if o.StdinGrace <= 0 {
		o.StdinGrace = DefaultStdinGrace
	}
	if o.TermGrace <= 0 {
		o.TermGrace = DefaultTermGrace
	}
	env = env[:len(env):len(env)] // the entries below never write into the caller's array
	if session != "" {
		env = append(env, session) // the last entry of a name wins
	}
	marker := newInstanceMarker()
	if marker != "" {
		env = append(env, marker)
	}
	cmd := exec.Command(command, args...)
	cmd.Env = env
	cmd.Dir = dir
	ownGroup(cmd)
	dieWithParent(cmd)

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	release := holdStarts()
	err = cmd.Start()
	if err == nil {
		registerChild(cmd.Process.Pid, marker)
	}
	release()
	if err != nil {
		closeAll()
		return nil, err
	}
	// The child holds its ends now.
	inR.Close()
	outW.Close()
	errW.Close()

	p := &Process{
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      inW,
		stdout:     outR,
		stdinW:     rawio.Writer(inW, inW),
		stdoutR:    rawio.Reader(outR, outR),
		stderr:     NewRing(stderrLimit),
		opts:       o,
		stderrR:    errR,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
		marker:     marker,
		id:         Identity{Pid: cmd.Process.Pid},
	}
	if id, ok := IdentityOf(p.pid); ok {
		p.id = id
	}
	go func() {
		defer close(p.stderrDone)
		buf := make([]byte, 4096)
		for {
			n, err := errR.Read(buf)
			p.stderr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() {
		// Park until the child exits without holding a thread where the
		// kernel allows it: twenty servers starting at once would
		// otherwise block twenty threads in wait4 and slow the startup.
		awaitExit(p.pid)
		cmd.Wait()
		unregisterChild(p.pid, marker)
		p.state = cmd.ProcessState
		close(p.exited)
		p.mu.Lock()
		fs := p.afterExit
		p.afterExit, p.exitRan = nil, true
		p.mu.Unlock()
		for _, f := range fs {
			f()
		}
	}()
	return p, nil
}

// Pid returns the child's process id (on Unix also its process group id).
func (p *Process) Pid() int { return p.pid }

// Stdin returns the write end of the child's stdin. Terminate closes it.
func (p *Process) Stdin() io.Writer { return p.stdinW }

// Stdout returns the read end of the child's stdout. Terminate closes it
// once the child is gone.
func (p *Process) Stdout() io.Reader { return p.stdoutR }

// Stderr returns the ring that keeps the child's stderr; [JSONLines] notes
// what it skipped there.
func (p *Process) Stderr() *Ring { return p.stderr }

// Exited returns a channel that is closed once the child exited and was
// reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// AfterExit arranges for f to run once the child exited and was reaped,
// on the goroutine that reaped it (so f must not block), or at once on the
// caller's goroutine when the child is gone already. It spares a caller
// that must notice the exit a goroutine of its own waiting on Exited.
func (p *Process) AfterExit(f func()) {
	p.mu.Lock()
	if !p.exitRan {
		p.afterExit = append(p.afterExit, f)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	f()
}

// ExitStatus returns the child's exit status once it was reaped: its exit
// code, or on Unix 128+signal when a signal ended it. It returns nil while
// the child runs.
func (p *Process) ExitStatus() *int {
	select {
	case <-p.exited:
	default:
		return nil
	}
	if p.state == nil {
		return nil
	}
	code := exitCode(p.state)
	return &code
}

// StderrTail returns the kept stderr, trimmed.
func (p *Process) StderrTail() string {
	return string(bytes.TrimSpace(p.stderr.Bytes()))
}

// Terminate shuts the process down: it closes stdin and waits
// [Options.StdinGrace]; then, on Unix, it signals the whole group, and
// every descendant found outside it, with SIGTERM and, if any remain after
// [Options.TermGrace], SIGKILL; elsewhere it kills the child. It waits
// for the child to be reaped and for stderr to drain, and closes stdout.
// It is idempotent and safe to call concurrently; every caller gets the
// same result.
func (p *Process) Terminate() error {
	p.once.Do(func() {
		p.termErr = p.terminate()
		p.finished()
	})
	return p.termErr
}

// drain waits (boundedly) for the last stderr bytes and closes the read
// ends, once the child was reaped.
func (p *Process) drain() {
	select {
	case <-p.stderrDone:
	case <-time.After(stderrDrain):
		// A process that escaped teardown still holds stderr; stop reading.
	}
	p.stderrR.Close()
	<-p.stderrDone
	p.stdout.Close()
}
