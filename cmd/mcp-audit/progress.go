package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
)

// defaultInstallAfter is how long a server started by a package runner
// (npx, uvx, …) may take before progress says it is probably installing.
const defaultInstallAfter = 2 * time.Second

// progressGateWait bounds how long run waits, after the gate returned,
// for the progress display to have shown every event up to the gate.
const progressGateWait = 2 * time.Second

// progressTypes are the events the progress display follows.
var progressTypes = []string{
	events.TypeServerDiscovered, events.TypeServerInvalid, events.TypeConnectStarted,
	events.TypeConnectFailed, events.TypeToolsListed, events.TypeToolsListFailed,
	events.TypeAuthRequired, events.TypeStartupGateElapsed,
}

// progress shows, on a terminal, what run waits for while the startup
// gate is open: a line when the servers start connecting, one per server
// as it connects or fails, and "installing…" for a server started by a
// package runner that is still starting after a while. It follows the
// events the session records, through a journal subscription, so what it
// says is what the recording holds. Its lines go to stderr; stdout, JSON
// or not, is untouched.
//
// One goroutine owns its state; [progress.stop] ends it and waits.
type progress struct {
	g            *globals // stderr, and colour decided for stderr
	gate         time.Duration
	installAfter time.Duration
	sub          *journal.Subscription
	installing   chan string   // a server's install timer fired
	gateSeen     chan struct{} // closed at the first StartupGateElapsed
	quit         chan struct{} // closed by stop
	done         chan struct{} // closed when the goroutine returns
	stopOnce     sync.Once

	// Owned by the goroutine.
	servers map[string]*progressServer
	width   int
	started bool
	gateAt  bool
}

type progressServer struct {
	runner     string // the package runner that starts it ("npx"), or ""
	connectAt  time.Time
	connecting bool
	installing bool // the installing line was printed
	reported   bool // its outcome line was printed
}

// showProgress reports whether run shows progress: not with --json, and
// only when stderr is a terminal (or a test forces it).
func showProgress(g *globals) bool {
	return !g.json && (g.forceProgress || isTerminal(g.stderr))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// startProgress subscribes to the events of session (which must not have
// started yet, so nothing is missed) and starts the display.
func startProgress(ctx context.Context, g *globals, j *journal.Journal, session string, gate time.Duration) (*progress, error) {
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{Session: session, Types: progressTypes})
	if err != nil {
		return nil, err
	}
	pg := *g
	pg.color = useColor(g.stderr)
	p := &progress{
		g: &pg, gate: gate, installAfter: g.installAfter, sub: sub,
		installing: make(chan string), gateSeen: make(chan struct{}), quit: make(chan struct{}), done: make(chan struct{}),
		servers: map[string]*progressServer{},
	}
	if p.installAfter <= 0 {
		p.installAfter = defaultInstallAfter
	}
	go p.run()
	return p, nil
}

// untilGate waits until the display has shown the events up to the first
// gate, ctx ends, or progressGateWait passes.
func (p *progress) untilGate(ctx context.Context) {
	t := time.NewTimer(progressGateWait)
	defer t.Stop()
	select {
	case <-p.gateSeen:
	case <-p.done:
	case <-ctx.Done():
	case <-t.C:
	}
}

// stop ends the display and waits for it. Idempotent.
func (p *progress) stop() {
	p.stopOnce.Do(func() {
		close(p.quit)
		p.sub.Close()
	})
	<-p.done
}

func (p *progress) run() {
	defer close(p.done)
	for {
		select {
		case env, ok := <-p.sub.C():
			if !ok {
				return
			}
			p.apply(env)
		case name := <-p.installing:
			p.showInstalling(name)
		case <-p.quit:
			return
		}
	}
}

func (p *progress) server(name string) *progressServer {
	s := p.servers[name]
	if s == nil {
		s = &progressServer{}
		p.servers[name] = s
		p.width = max(p.width, len(escapeLine(name)))
	}
	return s
}

func (p *progress) apply(env events.Envelope) {
	ev, err := events.Decode(env)
	if err != nil {
		return
	}
	switch e := ev.(type) {
	case *events.ServerDiscovered:
		p.server(e.Server).runner = packageRunner(e.Config.Command, e.Config.Args)
	case *events.ServerInvalid:
		s := p.server(e.Server)
		s.reported = true
		p.line(e.Server, p.g.paint(colorRed, "failed")+": "+escapeLine(errorCause(e.Server, e.Error)))
	case *events.ConnectStarted:
		s := p.server(e.Server)
		if !p.started {
			p.started = true
			n := 0
			for _, s := range p.servers {
				if !s.reported {
					n++
				}
			}
			fmt.Fprintf(p.g.stderr, "connecting %d %s (startup gate %s)…\n", n, plural(n, "server", "servers"), p.gate)
		}
		if s.reported || s.connecting {
			return
		}
		s.connecting, s.connectAt = true, env.Time
		if s.runner != "" {
			name := e.Server
			time.AfterFunc(p.installAfter, func() {
				select {
				case p.installing <- name:
				case <-p.quit:
				}
			})
		}
	case *events.ToolsListed:
		if s := p.server(e.Server); !s.reported {
			s.reported, s.connecting = true, false
			p.line(e.Server, fmt.Sprintf("%s, %d %s %s", p.g.paint(colorGreen, "connected"), e.Count, plural(e.Count, "tool", "tools"), p.after(s, env)))
		}
	case *events.ToolsListFailed:
		if s := p.server(e.Server); !s.reported {
			s.reported, s.connecting = true, false
			p.line(e.Server, fmt.Sprintf("%s %s, but tools/list failed: %s", p.g.paint(colorYellow, "connected"), p.after(s, env), escapeLine(errorCause(e.Server, e.Error))))
		}
	case *events.ConnectFailed:
		if s := p.server(e.Server); !s.reported {
			s.reported, s.connecting = true, false
			p.line(e.Server, fmt.Sprintf("%s %s: %s", p.g.paint(colorRed, "failed"), p.after(s, env), escapeLine(clip(errorCause(e.Server, e.Error), 160))))
		}
	case *events.AuthRequired:
		if s := p.server(e.Server); !s.reported {
			s.reported, s.connecting = true, false
			p.line(e.Server, fmt.Sprintf("%s (mcp-audit auth login %s, or run --login)", p.g.paint(colorYellow, "needs-auth"), escapeLine(e.Server)))
		}
	case *events.StartupGateElapsed:
		if !p.gateAt {
			p.gateAt = true
			close(p.gateSeen)
		}
	}
}

// after says how long s took since its connect started.
func (p *progress) after(s *progressServer, env events.Envelope) string {
	if s.connectAt.IsZero() {
		return ""
	}
	return "after " + fmtBar(env.Time.Sub(s.connectAt))
}

func (p *progress) showInstalling(name string) {
	s := p.servers[name]
	if s == nil || !s.connecting || s.installing {
		return
	}
	s.installing = true
	p.line(name, fmt.Sprintf("%s (%s is still starting after %s; a first run downloads the package)", p.g.paint(colorYellow, "installing…"), s.runner, fmtDur(p.installAfter)))
}

func (p *progress) line(server, text string) {
	fmt.Fprintf(p.g.stderr, "  %-*s  %s\n", p.width, escapeLine(server), text)
}

// packageRunner names the package runner that command (with args) runs
// a server through, such as "npx" or "pnpm dlx", or returns "" when it
// is none: such a server may spend its first start downloading.
func packageRunner(command string, args []string) string {
	// The last element of a Unix or a Windows path, wherever this runs.
	base := strings.ToLower(command[strings.LastIndexAny(command, `/\`)+1:])
	for _, ext := range []string{".exe", ".cmd", ".bat", ".ps1"} {
		base = strings.TrimSuffix(base, ext)
	}
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch base {
	case "npx", "pnpx", "bunx", "uvx":
		return base
	case "cmd":
		// Windows configs wrap the runner: cmd /c npx …
		if len(args) > 1 && strings.EqualFold(args[0], "/c") {
			return packageRunner(args[1], args[2:])
		}
	case "pnpm", "yarn":
		if sub == "dlx" {
			return base + " dlx"
		}
	case "npm":
		if sub == "exec" || sub == "x" {
			return base + " " + sub
		}
	case "bun":
		if sub == "x" {
			return "bun x"
		}
	case "pipx":
		if sub == "run" {
			return "pipx run"
		}
	case "uv":
		if sub == "tool" && len(args) > 1 && args[1] == "run" {
			return "uv tool run"
		}
		if sub == "run" && slices.Contains(args, "--with") {
			return "uv run"
		}
	case "deno":
		if sub == "run" && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "npm:") || strings.HasPrefix(a, "jsr:") }) {
			return "deno run"
		}
	case "docker", "podman":
		if sub == "run" {
			return base + " run"
		}
	}
	return ""
}
