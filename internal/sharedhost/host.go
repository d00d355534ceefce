package sharedhost

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/internal/splice"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/store"
)

// DefaultIdle is how long a server keeps running after its last host
// detached.
const DefaultIdle = 10 * time.Minute

// DefaultFirstHost is how long a shared host that never had a host waits
// for its first.
const DefaultFirstHost = time.Minute

// Options configure [Serve]. Nil or zero fields mean defaults.
type Options struct {
	// Idle is how long a server keeps running after its last host
	// detached (default [DefaultIdle]).
	Idle time.Duration
	// FirstHost is how long a shared host waits for its first host before
	// it ends (default [DefaultFirstHost]).
	FirstHost time.Duration
	// Manager configures the shared host's manager; its Share is
	// ignored (a shared host runs its servers itself).
	Manager *manager.Options
	// Logger receives the shared host's problems (default: discard).
	Logger *slog.Logger
	// Ready, when set, is called once the shared host serves.
	Ready func()
}

// Serve runs a shared host on l, recording into session of j, until ctx
// ends or the shared host has neither servers nor hosts: after the last
// server stopped with no host attached, or Idle after the start without
// any host (Options.FirstHost). It records SessionStarted first and SessionClosed last (reason
// "idle" or "closed"), and closes l.
func Serve(ctx context.Context, l net.Listener, j *journal.Journal, session string, opts *Options) error {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.FirstHost <= 0 {
		o.FirstHost = DefaultFirstHost
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var mo manager.Options
	if o.Manager != nil {
		mo = *o.Manager
	}
	mo.Share = nil
	if mo.Logger == nil {
		mo.Logger = o.Logger
	}
	if mo.Gate == 0 {
		// An attach waits for its server's tools anyway.
		mo.Gate = 2 * time.Minute
	}
	var h *Host
	relayOf := func(server string) *Relay {
		h.mu.Lock()
		defer h.mu.Unlock()
		in := h.byID[server]
		if in == nil {
			return nil
		}
		select {
		case <-in.ready:
			if in.err == nil {
				return in.relay
			}
		default: // still starting: no call can be in flight
		}
		return nil
	}
	// A server's elicitation and sampling requests go to the host whose
	// call caused them.
	if mo.Elicit == nil {
		mo.Elicit = func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			if r := relayOf(server); r != nil {
				return r.Elicit(ctx, p)
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
	}
	if mo.Sample == nil {
		mo.Sample = func(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			if r := relayOf(server); r != nil {
				return r.Sample(ctx, p)
			}
			return nil, ErrNoCause
		}
	}
	// A server's resource updates go to the hosts subscribed to them (on
	// a goroutine of h.updates: the manager's callback must not wait for
	// a slow host).
	notify := mo.OnResourceUpdated
	mo.OnResourceUpdated = func(server, uri string) {
		if notify != nil {
			notify(server, uri)
		}
		if r := relayOf(server); r != nil {
			r.ResourceUpdated(uri)
		}
	}
	// The hosts' tool calls pass straight onto the manager's connections
	// to the servers where they can (splice.go).
	splices := splice.NewRegistry()
	splice.UseRegistry(&mo, splices)
	mgr, err := manager.New(j, session, &mo)
	if err != nil {
		l.Close()
		return err
	}
	key := make([]byte, 32)
	rand.Read(key)
	h = &Host{
		mgr: mgr, splices: splices, j: j, session: session, idle: o.Idle, firstHost: o.FirstHost, log: o.Logger, key: key,
		hosts: map[string]*hostConn{}, instances: map[string]*instance{}, byID: map[string]*instance{},
		empty: make(chan struct{}),
	}
	h.ctx, h.cancel = context.WithCancel(ctx)
	defer h.cancel()
	wd, _ := os.Getwd()
	started := &events.SessionStarted{Cwd: wd, Gate: mo.Gate, Options: map[string]string{"role": "shared host"}}
	if id, ok := proc.IdentityOf(os.Getpid()); ok {
		// A later session that finds this one open with its host gone
		// reaps what it left.
		started.Host = &events.ProcessRef{Pid: id.Pid, StartTime: id.StartTime}
		started.PidNamespace = events.PidNamespace()
	}
	if err := mgr.RecordSession(ctx, started); err != nil {
		mgr.Close(context.WithoutCancel(ctx))
		l.Close()
		return err
	}
	updates, err := mgr.Watch(h.ctx)
	if err == nil {
		h.wg.Go(func() { h.follow(updates) })
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+shared.PathHosts, h.control)
	mux.HandleFunc("POST "+shared.PathHosts+"/{host}"+shared.PathAttach, h.attach)
	mux.HandleFunc("/v1/s/{instance}/mcp", h.relayHTTP)
	mux.HandleFunc("POST /v1/s/{instance}/stream", h.relayStream)
	srv := &http.Server{Handler: mux, ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug)}
	h.mu.Lock()
	h.checkEmpty() // starts the wait for a first host
	h.mu.Unlock()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	if o.Ready != nil {
		o.Ready()
	}
	reason := "idle"
	select {
	case <-h.empty:
	case <-ctx.Done():
		reason = "closed"
	case err := <-served:
		reason = "closed"
		o.Logger.Error("shared host: serve", "err", err)
	}
	h.cancel() // ends the control streams
	h.mu.Lock()
	h.ending = true // no request enters after this
	h.mu.Unlock()
	srv.Close()
	cctx := context.WithoutCancel(ctx)
	h.mu.Lock()
	if h.emptyTimer != nil {
		h.emptyTimer.Stop()
	}
	for _, in := range h.byID {
		if in.idleTimer != nil {
			in.idleTimer.Stop()
		}
	}
	h.mu.Unlock()
	h.wg.Wait()
	h.requests.Wait()
	err = mgr.DisconnectAll(cctx)
	if rerr := mgr.RecordSession(cctx, &events.SessionClosed{Reason: reason}); err == nil {
		err = rerr
	}
	if cerr := mgr.Close(cctx); err == nil {
		err = cerr
	}
	h.updates.Wait() // none starts once the manager closed
	return err
}

// Host is a running shared host's state.
type Host struct {
	mgr     *manager.Manager
	splices *splice.Registry // the manager's connections, for spliced calls
	j       *journal.Journal
	session string
	idle    time.Duration
	// firstHost bounds the wait for the first host.
	firstHost time.Duration
	log       *slog.Logger
	key       []byte // of the keyed hash of resolved values; never leaves memory

	ctx    context.Context // ends when Serve returns
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// requests counts the control and attach requests being served, so
	// their HostDetached are recorded before SessionClosed.
	requests sync.WaitGroup
	// updates counts the deliveries of resource updates to the relays'
	// sessions.
	updates sync.WaitGroup

	mu         sync.Mutex
	hosts      map[string]*hostConn // attached hosts by id
	instances  map[string]*instance // running or starting, by key
	byID       map[string]*instance // every instance not yet stopped, by id
	nextHost   int
	emptyTimer *time.Timer
	emptyOnce  sync.Once
	empty      chan struct{} // closed when the shared host has nothing left
	hadAny     bool
	ending     bool // Serve is returning: no request enters
}

// hostConn is one attached host: its control stream.
type hostConn struct {
	id    string
	hello shared.Hello
	ctx   context.Context // ends with the control stream
	// attached counts the host's attachments per instance.
	attached map[*instance]int
}

// checkEmpty ends the shared host once it has neither hosts nor
// instances: at once after it had some, firstHost after its start
// otherwise.
// Requires h.mu.
func (h *Host) checkEmpty() {
	if len(h.hosts) > 0 || len(h.byID) > 0 {
		if h.emptyTimer != nil {
			h.emptyTimer.Stop()
			h.emptyTimer = nil
		}
		h.hadAny = true
		return
	}
	if h.hadAny {
		h.emptyOnce.Do(func() { close(h.empty) })
		return
	}
	if h.emptyTimer == nil {
		h.emptyTimer = time.AfterFunc(h.firstHost, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.hosts) == 0 && len(h.byID) == 0 {
				h.emptyOnce.Do(func() { close(h.empty) })
			}
		})
	}
}

// enter counts a request in, unless the shared host is ending.
func (h *Host) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ending {
		return false
	}
	h.requests.Add(1)
	return true
}

// maxHello bounds the body of a control request or an attach.
const maxHello = 1 << 20

// control serves a host's control stream: it writes the welcome and holds
// the response open until the host goes away or the shared host ends;
// then every instance of the host is released and its calls cancelled.
func (h *Host) control(w http.ResponseWriter, r *http.Request) {
	if !h.enter() {
		writeError(w, http.StatusServiceUnavailable, "shared host ending")
		return
	}
	defer h.requests.Done()
	var hello shared.Hello
	if err := json.NewDecoder(io.LimitReader(r.Body, maxHello)).Decode(&hello); err != nil {
		writeError(w, http.StatusBadRequest, "bad hello: "+err.Error())
		return
	}
	io.Copy(io.Discard, io.LimitReader(r.Body, maxHello)) // to its end, so the host's going away is noticed
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.mu.Lock()
	h.nextHost++
	hc := &hostConn{id: "h" + strconv.Itoa(h.nextHost), hello: hello, ctx: ctx, attached: map[*instance]int{}}
	h.hosts[hc.id] = hc
	h.checkEmpty()
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	json.NewEncoder(w).Encode(shared.Welcome{Host: hc.id, Session: h.session, Pid: os.Getpid()})
	http.NewResponseController(w).Flush()
	select {
	case <-r.Context().Done():
	case <-h.ctx.Done():
	}
	cancel()
	h.mu.Lock()
	delete(h.hosts, hc.id)
	held := maps.Clone(hc.attached)
	clear(hc.attached)
	h.mu.Unlock()
	for in, n := range held {
		h.release(in, hc, n, events.DetachHostGone)
	}
	h.mu.Lock()
	h.checkEmpty()
	h.mu.Unlock()
}

// attach serves an attach: it finds or starts the instance, counts the
// host in and answers with the instance's endpoint.
func (h *Host) attach(w http.ResponseWriter, r *http.Request) {
	if !h.enter() {
		writeError(w, http.StatusServiceUnavailable, "shared host ending")
		return
	}
	defer h.requests.Done()
	h.mu.Lock()
	hc := h.hosts[r.PathValue("host")]
	h.mu.Unlock()
	if hc == nil {
		writeError(w, http.StatusNotFound, "unknown host: open a control stream first")
		return
	}
	var a shared.Attach
	if err := json.NewDecoder(io.LimitReader(r.Body, maxHello)).Decode(&a); err != nil {
		writeError(w, http.StatusBadRequest, "bad attach: "+err.Error())
		return
	}
	if a.Config.Transport() != events.TransportStdio || a.Command == "" {
		writeError(w, http.StatusBadRequest, "only stdio servers are shared")
		return
	}
	var in *instance
	for {
		var err error
		if in, err = h.instanceFor(r.Context(), a); err != nil {
			writeError(w, http.StatusBadGateway, err.Error())
			return
		}
		h.mu.Lock()
		if !in.stopped {
			break // h.mu stays locked
		}
		// Its idle period ended meanwhile: the next one is started.
		h.mu.Unlock()
	}
	if hc.ctx.Err() != nil {
		h.mu.Unlock()
		writeError(w, http.StatusGone, "host detached")
		return
	}
	hc.attached[in]++
	in.refs++
	if in.idleTimer != nil {
		in.idleTimer.Stop()
		in.idleTimer = nil
	}
	h.mu.Unlock()
	h.record(&events.HostAttached{Server: in.id, Session: hc.hello.Session, Pid: hc.hello.Pid})
	att := shared.Attached{Instance: in.id, Endpoint: shared.Endpoint(in.id)}
	if a, err := in.relay.answers(r.Context()); err == nil {
		att.Answers = a
	} else {
		h.log.Warn("shared host: the relay's answers for the attach", "server", in.id, "err", err)
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), shared.StreamProtocol) {
		// The attach opens the instance's stream as well: the answer is
		// the stream's first line.
		io.Copy(io.Discard, io.LimitReader(r.Body, maxHello))
		line, _ := json.Marshal(att)
		rev := ""
		if att.Answers != nil {
			rev = strconv.FormatUint(att.Answers.Revision, 10)
		}
		h.serveStream(w, in, hc, append(line, '\n'), rev)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(att)
}

// record records a shared-host event, logging a failure.
func (h *Host) record(ev events.Event) {
	if err := h.mgr.RecordSession(context.WithoutCancel(h.ctx), ev); err != nil {
		h.log.Error("shared host: record", "type", ev.Type(), "err", err)
	}
}

// release takes n attachments of hc off in; the last one starts the
// instance's idle period, once the detach is recorded: the stop that
// ends the period always follows the HostDetached, however short it is.
func (h *Host) release(in *instance, hc *hostConn, n int, reason string) {
	h.mu.Lock()
	in.refs -= n
	h.mu.Unlock()
	h.record(&events.HostDetached{Server: in.id, Session: hc.hello.Session, Pid: hc.hello.Pid, Reason: reason})
	h.mu.Lock()
	if in.refs <= 0 && !in.stopped && in.idleTimer == nil && !h.ending {
		in.idleTimer = time.AfterFunc(h.idle, func() { h.stop(in) })
	}
	h.mu.Unlock()
}

// stop stops an instance whose idle period ended with no host.
func (h *Host) stop(in *instance) {
	h.mu.Lock()
	if in.refs > 0 || in.stopped {
		h.mu.Unlock()
		return
	}
	in.stopped = true
	in.idleTimer = nil
	if h.instances[in.key] == in {
		delete(h.instances, in.key)
	}
	h.mu.Unlock()
	if err := h.mgr.DisconnectServerBecause(context.WithoutCancel(h.ctx), in.id, events.ReasonIdle); err != nil {
		h.log.Warn("shared host: stop server", "server", in.id, "err", err)
	}
	h.mu.Lock()
	delete(h.byID, in.id)
	h.checkEmpty()
	h.mu.Unlock()
}

// keyOf returns the instance key of an attach: hosts share an instance
// only when the config hash, the resolved values (by a hash keyed with a
// secret of this process), the working directory and the roots are the
// same.
func (h *Host) keyOf(a shared.Attach) string {
	mac := hmac.New(sha256.New, h.key)
	resolved, _ := json.Marshal(struct {
		Command string
		Args    []string
		Env     map[string]string
	}{a.Command, a.Args, a.Env})
	mac.Write(resolved)
	sum := sha256.New()
	part, _ := json.Marshal([]any{a.Config.Hash(), hex.EncodeToString(mac.Sum(nil)), a.Cwd, a.Roots})
	sum.Write(part)
	return hex.EncodeToString(sum.Sum(nil))
}

// nameChars are the characters kept from a config's name in an instance
// id.
var nameChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// instanceFor returns the running instance for a, starting it when there
// is none; concurrent attaches of one key wait for one start.
func (h *Host) instanceFor(ctx context.Context, a shared.Attach) (*instance, error) {
	key := h.keyOf(a)
	h.mu.Lock()
	in := h.instances[key]
	if in == nil {
		id := nameChars.ReplaceAllString(a.Name, "_")
		if id == "" {
			id = "server"
		}
		id += "-" + key[:8]
		for n := 2; h.byID[id] != nil; n++ {
			id = fmt.Sprintf("%s-%s-%d", nameChars.ReplaceAllString(a.Name, "_"), key[:8], n)
		}
		in = newInstance(h, id, key)
		h.instances[key] = in
		h.byID[id] = in
		h.checkEmpty()
		h.mu.Unlock()
		in.err = h.start(in, a)
		if in.err != nil {
			h.mu.Lock()
			delete(h.instances, key)
			delete(h.byID, id)
			h.checkEmpty()
			h.mu.Unlock()
		}
		close(in.ready)
	} else {
		h.mu.Unlock()
	}
	select {
	case <-in.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return in, in.err
}

// start connects an instance's server in the shared host's manager and
// builds its relay.
func (h *Host) start(in *instance, a shared.Attach) error {
	cfg := a.Config.Clone()
	cfg.Name = in.id
	cfg.Command, cfg.Args, cfg.Cwd = a.Command, slices.Clone(a.Args), a.Cwd
	cfg.Env, cfg.Roots = maps.Clone(a.Env), slices.Clone(a.Roots)
	// The relay offers every tool; each host filters as its config says.
	cfg.EnabledTools, cfg.DisabledTools = nil, nil
	res, err := h.mgr.ConnectServers(h.ctx, []events.ServerConfig{cfg}, nil)
	if err != nil {
		return err
	}
	if err := res.Errors[in.id]; err != nil {
		h.mgr.DisconnectServer(context.WithoutCancel(h.ctx), in.id)
		return err
	}
	if !slices.Contains(res.Connected, in.id) {
		h.mgr.DisconnectServer(context.WithoutCancel(h.ctx), in.id)
		return fmt.Errorf("MCP server %q did not connect", a.Name)
	}
	connected, _ := LastConnected(h.ctx, h.j.Store(), h.session, in.id)
	in.build(connected)
	// The relay took the view as it was when it was built; the lists
	// recorded since (the first resource and prompt lists often land
	// now) reached follow while it could not sync the relay yet. From
	// here follow syncs it, and this sync covers what came before.
	testHooks.built(in.id)
	h.mu.Lock()
	in.following = true
	h.mu.Unlock()
	in.relay.Sync()
	return nil
}

// LastConnected returns the latest ServerConnected of server in session,
// nil when there is none.
func LastConnected(ctx context.Context, st store.Store, session, server string) (*events.ServerConnected, error) {
	var last *events.ServerConnected
	for env, err := range st.ReadStream(ctx, session, 1) {
		if err != nil {
			return last, err
		}
		if env.Type != events.TypeServerConnected {
			continue
		}
		ev, err := events.Decode(env)
		if err != nil {
			continue
		}
		if c, ok := ev.(*events.ServerConnected); ok && c.Server == server {
			last = c
		}
	}
	return last, nil
}

// follow keeps the relays' lists in step with the shared host's view. An
// instance whose relay is still being built is left to its start, which
// syncs the relay once more after it lets follow sync it: an update that
// comes in between is not lost. Every relay is synced on every update,
// whichever server it names: updates are coalesced, so the one handled
// may stand for changes of other servers too.
func (h *Host) follow(updates <-chan manager.Update) {
	for u := range updates {
		h.mu.Lock()
		var ins []*instance
		for _, in := range h.byID {
			if in.following {
				ins = append(ins, in)
			}
		}
		h.mu.Unlock()
		for _, in := range ins {
			in.relay.Sync()
		}
		testHooks.followed(u)
	}
}

// streamEnded releases the attachment of hc to in that the stream conn
// held, once the stream's session ended. The control stream decides how
// a host's attachments end: a stream's end is recorded as a detach only
// when the host closed the stream itself, which it does by closing its
// writing half and reading on until the shared host closes its end (so an
// empty line, which a reader of JSON-RPC skips, still reaches it). A
// stream that ended with the control stream, or that was cut whole (the
// host's process died, or the shared host cut its connections), leaves
// its attachment to the control stream's end, which records the host as
// gone. So the reason recorded does not depend on which of a host's
// connections is seen ending first.
func (h *Host) streamEnded(in *instance, hc *hostConn, conn net.Conn) {
	if hc.ctx.Err() != nil {
		return
	}
	if _, err := io.WriteString(conn, "\n"); err != nil {
		return
	}
	h.releaseOne(in, hc)
}

// releaseOne releases one attachment of hc to in, if it has one, as a
// detach the host asked for.
func (h *Host) releaseOne(in *instance, hc *hostConn) {
	h.mu.Lock()
	n := hc.attached[in]
	if n > 0 {
		if n == 1 {
			delete(hc.attached, in)
		} else {
			hc.attached[in] = n - 1
		}
	}
	h.mu.Unlock()
	if n > 0 {
		h.release(in, hc, 1, events.DetachRequested)
	}
}

// writeError answers with a [shared.Failure].
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(shared.Failure{Error: msg})
}

var errUnknownInstance = errors.New("unknown shared instance")

// testHooks are called at points of the shared host's work that its tests
// need to order against other work; outside the tests they do nothing.
var testHooks = struct {
	// built: an instance's relay was built, and follow does not sync it
	// yet.
	built func(id string)
	// followed: follow handled an update.
	followed func(manager.Update)
}{built: func(string) {}, followed: func(manager.Update) {}}
