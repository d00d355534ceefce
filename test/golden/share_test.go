package golden

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/internal/sharedhost"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/verify"
)

// shareSpec is config.json's "share": the scenario's hosts attach their
// stdio servers to a shared host that the script starts ("share-host
// start") in the test process, on a socket of its own.
type shareSpec struct {
	// Idle is the shared host's idle period (default an hour: a server
	// stops only in a scenario about that).
	Idle string `json:"idle"`
}

// shareRig is a scenario's sharing: the shared hosts started so far and
// the second host.
type shareRig struct {
	socket string
	idle   time.Duration
	hosts  []*sharedHostRun // in start order; the last is the current one
	host2  *manager.Manager
	recs   map[string]*recorder // of the sessions other than the scenario's
	// sessions are the other sessions, in order of first appearance.
	sessions []string
}

// sharedHostRun is one shared host serving in the test process.
type sharedHostRun struct {
	session string
	cancel  context.CancelFunc
	l       *trackListener
	done    chan error
}

// host2Session is the second host's session id.
const host2Session = "host2"

func (r *runner) setupShare(spec *shareSpec) {
	rig := &shareRig{socket: filepath.Join(r.t.TempDir(), "run", shared.SocketName), idle: time.Hour, recs: map[string]*recorder{}}
	if spec.Idle != "" {
		d, err := time.ParseDuration(spec.Idle)
		if err != nil || d <= 0 {
			r.t.Fatalf("%s: share idle %q", sectionConfig, spec.Idle)
		}
		rig.idle = d
	}
	r.share = rig
	// The shared host's session starts in its working directory.
	if wd, err := os.Getwd(); err == nil {
		r.norm.add(wd, "$WD")
	}
	// The MCP session of a relay is named by the shared host at random.
	r.norm.addPattern(regexp.MustCompile(`\(session ID: [A-Za-z0-9_-]+\)`), "(session ID: $$MCPSESSION)")
	r.norm.addPattern(regexp.MustCompile(`\bpid=`+strconv.Itoa(os.Getpid())+`\b`), "pid=$$PID")
	r.t.Cleanup(func() {
		for _, h := range rig.hosts {
			h.cancel()
			select {
			case <-h.done:
			case <-time.After(stepTimeout):
				r.t.Errorf("shared host %s did not end", h.session)
			}
		}
	})
}

// shareOptions are a host's sharing options in a sharing scenario.
func (r *runner) shareOptions() *manager.ShareOptions {
	if r.share == nil {
		return nil
	}
	return &manager.ShareOptions{Socket: r.share.socket, NoStart: true}
}

// session notes a session to print and follows it for "wait".
func (r *runner) followSession(id string) *recorder {
	rig := r.share
	if rec, ok := rig.recs[id]; ok {
		return rec
	}
	rec := newSessionRecorder(r.t, r.ctx, r.j, id)
	rig.recs[id] = rec
	rig.sessions = append(rig.sessions, id)
	return rec
}

// shareHostStep runs "share-host start|kill|end|wait ...".
func (r *runner) shareHostStep(ctx context.Context, s step) ([]string, error) {
	rig := r.share
	if rig == nil {
		return nil, errors.New("share-host needs \"share\" in config.json")
	}
	if len(s.Args) == 0 {
		return nil, errors.New("want share-host start|kill|end|wait")
	}
	var cur *sharedHostRun
	if n := len(rig.hosts); n > 0 {
		cur = rig.hosts[n-1]
	}
	switch s.Args[0] {
	case "start":
		if cur != nil {
			select {
			case err := <-cur.done:
				cur.done <- err
			default:
				return nil, errors.New("a shared host is running")
			}
		}
		l, err := shared.Listen(rig.socket)
		if err != nil {
			return nil, err
		}
		tl := &trackListener{Listener: l}
		id := "shared-host-" + strconv.Itoa(len(rig.hosts)+1)
		r.followSession(id)
		sctx, cancel := context.WithCancel(r.ctx)
		h := &sharedHostRun{session: id, cancel: cancel, l: tl, done: make(chan error, 1)}
		ready := make(chan struct{})
		go func() {
			h.done <- sharedhost.Serve(sctx, tl, r.j, id, &sharedhost.Options{
				Idle: rig.idle, Logger: slog.New(slog.DiscardHandler), Ready: func() { close(ready) },
			})
		}()
		rig.hosts = append(rig.hosts, h)
		select {
		case <-ready:
			return []string{"serving " + id}, nil
		case err := <-h.done:
			h.done <- err
			return nil, fmt.Errorf("shared host: %w", err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "kill", "end":
		if cur == nil {
			return nil, errors.New("no shared host started")
		}
		if s.Args[0] == "kill" {
			// Its hosts see their connections cut first, as when the
			// process dies; then it ends.
			cur.l.cut()
			cur.cancel()
		}
		select {
		case err := <-cur.done:
			cur.done <- err
			return []string{cur.session + " ended: " + errText(err)}, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("the shared host did not end: %w", ctx.Err())
		}
	case "wait":
		if cur == nil {
			return nil, errors.New("no shared host started")
		}
		return nil, r.waitOn(ctx, rig.recs[cur.session], s.Args[1:])
	}
	return nil, fmt.Errorf("share-host %s: want start, kill, end or wait", s.Args[0])
}

// host2Step runs "host2 STEP": STEP (connect, call, disconnect, wait or
// close) on a second host of the scenario's servers, recording into the
// session host2.
func (r *runner) host2Step(ctx context.Context, s step) ([]string, error) {
	rig := r.share
	if rig == nil {
		return nil, errors.New("host2 needs \"share\" in config.json")
	}
	if rig.host2 == nil {
		r.followSession(host2Session)
		if _, err := r.j.Append(ctx, host2Session, &events.SessionStarted{Cwd: r.cwd, Gate: r.gate}); err != nil {
			return nil, err
		}
		m, err := manager.New(r.j, host2Session, &manager.Options{
			Cwd: r.cwd, Gate: r.gate, Reconnect: r.reconnect, Logger: slog.New(r.logs), Share: r.shareOptions(),
		})
		if err != nil {
			return nil, err
		}
		rig.host2 = m
		r.t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
			defer cancel()
			m.Close(ctx)
		})
	}
	verb, rest, _ := strings.Cut(s.Rest, " ")
	rest = strings.TrimSpace(rest)
	inner := step{Verb: verb, Rest: rest, Args: strings.Fields(rest)}
	m := rig.host2
	switch inner.Verb {
	case "connect":
		cfgs, err := r.configsOf(inner.Args)
		if err != nil {
			return nil, err
		}
		res, err := m.ConnectServers(ctx, cfgs, r.sources)
		return r.formatConnect(res, err), nil
	case "call":
		name, args, _ := strings.Cut(inner.Rest, " ")
		tool, ok := m.Tool(name)
		if !ok {
			return nil, fmt.Errorf("host2 has no tool %s", name)
		}
		var raw json.RawMessage
		if args = strings.TrimSpace(args); args != "" {
			raw = json.RawMessage(r.expandGateRefs(args))
		}
		res, err := tool.Call(ctx, raw)
		if err != nil {
			return []string{"error: " + err.Error()}, nil
		}
		return []string{formatCall(res)}, nil
	case "disconnect":
		if len(inner.Args) != 1 {
			return nil, errors.New("want host2 disconnect NAME")
		}
		return []string{errText(m.DisconnectServer(ctx, inner.Args[0]))}, nil
	case "wait":
		return nil, r.waitOn(ctx, rig.recs[host2Session], inner.Args)
	case "close":
		err := m.Close(ctx)
		if _, aerr := r.j.Append(ctx, host2Session, &events.SessionClosed{Reason: "scenario finished"}); err == nil {
			err = aerr
		}
		return []string{errText(err)}, nil
	}
	return nil, fmt.Errorf("host2 %s: want connect, call, disconnect, wait or close", inner.Verb)
}

// shareActs reports whether a share-host or host2 step is an action,
// which moves the mark a later "wait" starts after.
func shareActs(s step) bool {
	switch s.Verb {
	case "share-host":
		return len(s.Args) > 0 && s.Args[0] != "wait"
	case "host2":
		return len(s.Args) > 0 && s.Args[0] != "wait"
	}
	return false
}

// sharedEventLines are the other sessions' events, each after a line
// naming it, with the shared instances named by first appearance.
func (r *runner) sharedEventLines() []string {
	rig := r.share
	if rig == nil {
		return nil
	}
	var out []string
	for _, id := range rig.sessions {
		envs := r.sessionHistory(id)
		for _, v := range verify.Session(id, envs) {
			r.t.Errorf("session %s: invariant broken: %s", id, v)
		}
		out = append(out, "", "session "+id+":")
		out = append(out, r.eventLines(envs)...)
	}
	return out
}

// learnInstances names every shared instance NAME~N, N counting the
// instances of the scenario in the order their shared hosts started them.
func (r *runner) learnInstances() {
	n := 0
	for _, h := range r.share.hosts {
		for _, env := range r.sessionHistory(h.session) {
			if env.Type != events.TypeServerConnected {
				continue
			}
			ev, err := events.Decode(env)
			if err != nil {
				continue
			}
			id := events.ServerOf(ev)
			name := id
			if i := strings.LastIndex(id, "-"); i > 0 {
				name = id[:i]
			}
			n++
			r.norm.add(id, name+"~"+strconv.Itoa(n))
		}
	}
}

// sessionHistory returns a session's stored events.
func (r *runner) sessionHistory(id string) []events.Envelope {
	var out []events.Envelope
	for env, err := range r.st.ReadStream(context.Background(), id, 1) {
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// trackListener keeps the connections it accepted, so that a "kill"
// cuts them all at once.
type trackListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func (l *trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead {
		c.Close()
		return nil, net.ErrClosed
	}
	l.conns = append(l.conns, c)
	return c, nil
}

// cut closes the listener and every connection accepted.
func (l *trackListener) cut() {
	l.mu.Lock()
	l.dead = true
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	l.Listener.Close()
	for _, c := range conns {
		c.Close()
	}
}

// endShare closes the second host and ends the shared hosts still
// running, once the scenario's host has closed, so every session is
// complete before it is printed.
func (r *runner) endShare(ctx context.Context) {
	rig := r.share
	if rig == nil {
		return
	}
	if m := rig.host2; m != nil && len(r.sessionHistory(host2Session)) > 0 {
		if envs := r.sessionHistory(host2Session); envs[len(envs)-1].Type != events.TypeSessionClosed {
			m.Close(ctx)
			r.j.Append(ctx, host2Session, &events.SessionClosed{Reason: "scenario finished"})
		}
	}
	defer r.learnInstances() // before any session is printed
	for _, h := range rig.hosts {
		h.cancel()
		select {
		case err := <-h.done:
			h.done <- err
		case <-ctx.Done():
			r.t.Fatalf("shared host %s did not end", h.session)
		}
	}
}
