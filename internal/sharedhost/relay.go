package sharedhost

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/rawio"
	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/manager"
)

// instance is one shared server: a server of the shared host's manager
// and the relay MCP server the hosts attached to it talk to.
type instance struct {
	h   *Host
	id  string // the server's name in the shared host's manager
	key string

	ready chan struct{} // closed when the start ended; err says how
	err   error

	// Guarded by h.mu.
	refs      int // attachments of every host
	idleTimer *time.Timer
	stopped   bool
	// following: the relay is built and follows the view's updates
	// (see start).
	following bool

	relay   *Relay
	handler http.Handler
}

func newInstance(h *Host, id, key string) *instance {
	return &instance{h: h, id: id, key: key, ready: make(chan struct{})}
}

// build creates the instance's relay and its streamable HTTP endpoint. A
// call is cancelled when the control stream of the host that made it
// ends.
func (in *instance) build(c *events.ServerConnected) {
	in.relay = NewRelay(in.h.mgr, in.id, c, &RelayOptions{CallContext: func(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelFunc) {
		hc, _ := ctx.Value(hostKey{}).(*hostConn) // a stream's
		if hc == nil && req.Extra != nil {        // streamable HTTP's
			hc = in.h.hostOf(req.Extra.Header.Get(shared.HostHeader))
		}
		if hc == nil {
			return ctx, func() {}
		}
		ctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(hc.ctx, cancel)
		return ctx, func() { stop(); cancel() }
	}, Go: in.h.updates.Go})
	in.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return in.relay.Server() }, nil)
}

// Relay is an MCP server that mirrors one server of a manager: the real
// server's name, version, instructions and capabilities (lists always
// with listChanged, since the relay follows the server's lists), and its
// tools, resources, resource templates and prompts as the server listed
// them. Calls, reads, prompt gets, completions and resource subscriptions
// go through the manager (recorded there), a call's progress relayed; the
// server's resource updates reach the sessions subscribed to them
// ([Relay.ResourceUpdated]; [Relay.SessionEnded] forgets a session's).
// [Relay.Sync] brings its lists in step with the manager's view. It is
// safe for concurrent use.
type Relay struct {
	mgr    *manager.Manager
	server string
	opts   RelayOptions
	srv    *mcp.Server

	mu        sync.Mutex
	tools     map[string]events.ToolDef // the relay's tools by name
	resources map[string]events.ResourceDef
	templates map[string]events.ResourceTemplateDef
	prompts   map[string]events.PromptDef
	// calls counts the calls in flight by the relay session that made
	// them, so a request of the server is sent to the host it is for.
	calls map[*mcp.ServerSession]int

	subs *subscriptions
	// syncMu serializes Sync, from its read of the view to the last
	// change, so a Sync that read an older view never undoes a newer
	// one's changes.
	syncMu sync.Mutex
	// rev counts the changes of tools; ans are the answers of an attach
	// as of one revision (answers.go).
	rev uint64
	ans *shared.Answers
}

// RelayOptions configure a [Relay]; nil means defaults.
type RelayOptions struct {
	// CallContext, when set, derives the context of each call from the
	// request's (the returned function is called when the call ends).
	CallContext func(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelFunc)
	// Go starts the goroutine that tells the relay's sessions of resource
	// updates ([Relay.ResourceUpdated]; default: a go statement), so its
	// owner can wait for it (a WaitGroup's Go).
	Go func(func())
}

// NewRelay returns a relay of the manager's server, described by its
// latest ServerConnected (nil: a generic name and the tools capability
// only), with the server's tools.
func NewRelay(mgr *manager.Manager, server string, c *events.ServerConnected, opts *RelayOptions) *Relay {
	r := &Relay{mgr: mgr, server: server, tools: map[string]events.ToolDef{},
		resources: map[string]events.ResourceDef{}, templates: map[string]events.ResourceTemplateDef{}, prompts: map[string]events.PromptDef{},
		calls: map[*mcp.ServerSession]int{}, subs: newSubscriptions()}
	if opts != nil {
		r.opts = *opts
	}
	impl := &mcp.Implementation{Name: "mcplife-shared", Version: "0"}
	sopts := &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{}}
	if c != nil {
		if c.PeerName != "" {
			impl = &mcp.Implementation{Name: c.PeerName, Version: c.PeerVersion}
		}
		sopts.Instructions = c.Instructions
		if len(c.Capabilities) > 0 {
			var caps mcp.ServerCapabilities
			if json.Unmarshal(c.Capabilities, &caps) == nil {
				sopts.Capabilities = &caps
			}
		}
	}
	caps := sopts.Capabilities
	if caps.Tools == nil {
		caps.Tools = &mcp.ToolCapabilities{}
	}
	caps.Tools.ListChanged = true
	if caps.Resources != nil {
		// Lists follow the server's; subscriptions are relayed when it
		// offers them.
		caps.Resources.ListChanged = true
		if caps.Resources.Subscribe {
			sopts.SubscribeHandler, sopts.UnsubscribeHandler = r.subscribe, r.unsubscribe
		}
	}
	if caps.Prompts != nil {
		caps.Prompts.ListChanged = true
	}
	if caps.Completions != nil {
		sopts.CompletionHandler = func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return mgr.Complete(ctx, server, req.Params)
		}
	}
	r.srv = mcp.NewServer(impl, sopts)
	r.srv.AddSendingMiddleware(r.tellChanges)
	r.Sync()
	return r
}

// Server returns the relay's MCP server.
func (r *Relay) Server() *mcp.Server { return r.srv }

// Sync makes the relay's tools the server's latest list: tools gone are
// removed, new or changed ones added (the go-sdk tells the relay's
// clients their list changed).
func (r *Relay) Sync() {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	st, ok := r.mgr.View().Server(r.server)
	if !ok {
		return
	}
	exposed := map[string]string{} // original → exposed name in the manager
	for _, t := range r.mgr.Tools() {
		if t.Server == r.server {
			exposed[t.Original] = t.Name
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	want := map[string]events.ToolDef{}
	for _, d := range st.Tools {
		want[d.Name] = d
	}
	var gone []string
	for name := range r.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		r.rev++ // before the change: see answers.go
		r.srv.RemoveTools(gone...)
		for _, n := range gone {
			delete(r.tools, n)
		}
	}
	for _, d := range st.Tools {
		if old, ok := r.tools[d.Name]; ok && sameDef(old, d) {
			continue
		}
		name := exposed[d.Name]
		if name == "" {
			continue
		}
		r.rev++
		r.srv.AddTool(relayTool(d), r.callHandler(name))
		r.tools[d.Name] = d
	}
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return r.mgr.ReadResource(ctx, r.server, req.Params.URI)
	}
	syncSet(r.resources, st.Resources, func(d events.ResourceDef) string { return d.URI }, r.srv.RemoveResources, func(d events.ResourceDef) {
		r.srv.AddResource(wireAs[mcp.Resource](d), read)
	})
	syncSet(r.templates, st.Templates, func(d events.ResourceTemplateDef) string { return d.URITemplate }, r.srv.RemoveResourceTemplates, func(d events.ResourceTemplateDef) {
		r.srv.AddResourceTemplate(wireAs[mcp.ResourceTemplate](d), read)
	})
	syncSet(r.prompts, st.Prompts, func(d events.PromptDef) string { return d.Name }, r.srv.RemovePrompts, func(d events.PromptDef) {
		r.srv.AddPrompt(wireAs[mcp.Prompt](d), func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return r.mgr.GetPrompt(ctx, r.server, req.Params.Name, req.Params.Arguments)
		})
	})
}

// syncSet brings a relay's set of definitions (have, by key) to want:
// those gone are removed, new or changed ones added. Requires r.mu.
func syncSet[D any](have map[string]D, want []D, key func(D) string, remove func(...string), add func(D)) {
	keep := map[string]bool{}
	for _, d := range want {
		keep[key(d)] = true
	}
	var gone []string
	for k := range have {
		if !keep[k] {
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		remove(gone...)
		for _, k := range gone {
			delete(have, k)
		}
	}
	for _, d := range want {
		if old, ok := have[key(d)]; ok && sameJSON(old, d) {
			continue
		}
		add(d)
		have[key(d)] = d
	}
}

// wireAs converts a recorded definition to its go-sdk type: the recorded
// fields have the wire's names.
func wireAs[T any](def any) *T {
	var out T
	b, _ := json.Marshal(def)
	json.Unmarshal(b, &out)
	return &out
}

// sameDef reports whether two tool definitions are the same.
func sameDef(a, b events.ToolDef) bool { return sameJSON(a, b) }

// sameJSON reports whether two values encode the same.
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// relayTool is the relay's form of a listed tool: as the server sent it.
func relayTool(d events.ToolDef) *mcp.Tool {
	t := &mcp.Tool{Name: d.Name, Title: d.Title, Description: d.Description}
	t.InputSchema = json.RawMessage(d.InputSchema)
	if len(d.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = json.RawMessage(d.OutputSchema)
	}
	if len(d.Annotations) > 0 {
		var a mcp.ToolAnnotations
		if json.Unmarshal(d.Annotations, &a) == nil {
			t.Annotations = &a
		}
	}
	if len(d.Icons) > 0 {
		json.Unmarshal(d.Icons, &t.Icons)
	}
	return t
}

// callHandler calls the tool exposed as name in the manager, relaying its
// progress.
func (r *Relay) callHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r.opts.CallContext != nil {
			var done context.CancelFunc
			ctx, done = r.opts.CallContext(ctx, req)
			defer done()
		}
		if ss := req.Session; ss != nil {
			r.mu.Lock()
			r.calls[ss]++
			r.mu.Unlock()
			defer func() {
				r.mu.Lock()
				if r.calls[ss]--; r.calls[ss] <= 0 {
					delete(r.calls, ss)
				}
				r.mu.Unlock()
			}()
		}
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			ss := req.Session
			ctx = manager.WithProgress(ctx, func(p manager.Progress) {
				ss.NotifyProgress(context.WithoutCancel(ctx), &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: p.Progress, Total: p.Total, Message: p.Message,
				})
			})
		}
		t, ok := r.mgr.Tool(name)
		if !ok {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: manager.ErrorPrefix + "MCP server " + r.server + " no longer has this tool"}}}, nil
		}
		var args any
		if len(req.Params.Arguments) > 0 {
			args = json.RawMessage(req.Params.Arguments)
		}
		res, err := t.Call(ctx, args)
		if err != nil {
			return nil, err
		}
		return res.Result, nil
	}
}

// hostOf returns the attached host of an id, nil when it is not.
func (h *Host) hostOf(id string) *hostConn {
	if id == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hosts[id]
}

// servedInstance returns the ready instance the request names, or nil
// after answering that there is none (or that it is still starting).
func (h *Host) servedInstance(w http.ResponseWriter, r *http.Request) *instance {
	h.mu.Lock()
	in := h.byID[r.PathValue("instance")]
	h.mu.Unlock()
	if in == nil {
		writeError(w, http.StatusNotFound, errUnknownInstance.Error())
		return nil
	}
	select {
	case <-in.ready:
	default:
		writeError(w, http.StatusServiceUnavailable, "shared instance starting")
		return nil
	}
	if in.err != nil {
		writeError(w, http.StatusNotFound, errUnknownInstance.Error())
		return nil
	}
	return in
}

// relayHTTP serves an instance's MCP endpoint. A DELETE (the host closed
// its MCP session) releases the host's attachment.
func (h *Host) relayHTTP(w http.ResponseWriter, r *http.Request) {
	in := h.servedInstance(w, r)
	if in == nil {
		return
	}
	if r.Method == http.MethodDelete {
		// The detach is recorded before the host has its answer, so a
		// host that closed its MCP session and then its control stream
		// is recorded as detached on request, never as gone.
		h.detach(in, r.Header.Get(shared.HostHeader))
	}
	in.handler.ServeHTTP(w, r)
	if r.Method == http.MethodDelete {
		in.relay.forgetEnded() // the session just closed
	}
}

// detach releases one attachment of the host named hostID to in.
func (h *Host) detach(in *instance, hostID string) {
	hc := h.hostOf(hostID)
	if hc == nil {
		return
	}
	h.releaseOne(in, hc)
}

// hostKey is the context key of the host whose stream a request came on.
type hostKey struct{}

// relayStream serves an instance's stream: the request is upgraded to a
// bidirectional byte stream of newline-delimited JSON-RPC, an MCP session
// of the instance's relay. Its end (the host closed its session, or its
// control stream ended, which closes it) releases the host's attachment
// (see streamEnded).
func (h *Host) relayStream(w http.ResponseWriter, r *http.Request) {
	in := h.servedInstance(w, r)
	if in == nil {
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), shared.StreamProtocol) {
		writeError(w, http.StatusBadRequest, "want Upgrade: "+shared.StreamProtocol)
		return
	}
	hc := h.hostOf(r.Header.Get(shared.HostHeader))
	if hc == nil {
		writeError(w, http.StatusNotFound, "unknown host")
		return
	}
	if !h.enter() {
		writeError(w, http.StatusServiceUnavailable, "shared host ending")
		return
	}
	defer h.requests.Done()
	h.serveStream(w, in, hc, nil, r.Header.Get(shared.RevisionHeader))
}

// serveStream upgrades a request of hc to in's stream, whose first bytes
// after the 101 are first, and serves it until its end, which releases
// one attachment of hc to in. revision is that of the answers hc was
// given ("": none).
func (h *Host) serveStream(w http.ResponseWriter, in *instance, hc *hostConn, first []byte, revision string) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	conn.SetDeadline(time.Time{})
	s := newStream(conn, brw.Reader)
	defer conn.Close()
	head := "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + shared.StreamProtocol + "\r\n\r\n"
	if _, err := io.WriteString(conn, head+string(first)); err != nil {
		return
	}
	// The host travels in the session's context, which the go-sdk hands
	// to each request's handler.
	sctx := withRevision(context.WithValue(hc.ctx, hostKey{}, hc), revision)
	sp := in.splicer(s)
	ss, err := in.relay.Server().Connect(sctx, sp, nil)
	sp.bind(ss)
	if err != nil {
		return
	}
	stop := context.AfterFunc(hc.ctx, func() { ss.Close() })
	ss.Wait()
	stop()
	sp.end()
	in.relay.SessionEnded(ss)
	h.streamEnded(in, hc, conn)
}

// stream is a hijacked connection: reads go through the buffer that read
// the request. Its Close (the session's end) only stops the reads: the
// connection is closed after the release, so the host's close of its
// session returns once the detach is recorded.
type stream struct {
	net.Conn
	r    io.Reader
	w    io.Writer
	once sync.Once
}

func newStream(conn net.Conn, br *bufio.Reader) *stream {
	s := &stream{Conn: conn}
	s.r, s.w = rawio.Conn(conn, br)
	return s
}

func (s *stream) Read(p []byte) (int, error) { return s.r.Read(p) }

func (s *stream) Write(p []byte) (int, error) { return s.w.Write(p) }

func (s *stream) Close() error {
	s.once.Do(func() { s.Conn.SetReadDeadline(time.Now()) })
	return nil
}

// ErrNoCause is the answer to a server's request for sampling that no
// host's call can have caused: none, or calls of several hosts, were in
// flight.
var ErrNoCause = errors.New("no single call of an attached host is in flight to answer this request")

// cause returns the relay session whose calls alone are in flight, nil
// when there is none or there are several.
func (r *Relay) cause() *mcp.ServerSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) != 1 {
		return nil
	}
	for ss := range r.calls {
		return ss
	}
	return nil
}

// Elicit passes a server's elicitation request to the host whose call
// caused it: the one host with calls in flight. With none, or several, it
// is declined.
func (r *Relay) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ss := r.cause()
	if ss == nil {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	res, err := ss.Elicit(ctx, p)
	if err != nil {
		return &mcp.ElicitResult{Action: "decline"}, nil // the host does not answer elicitation
	}
	return res, nil
}

// Sample passes a server's sampling request to the host whose call caused
// it, as Elicit does; without one it fails with [ErrNoCause].
func (r *Relay) Sample(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	ss := r.cause()
	if ss == nil {
		return nil, ErrNoCause
	}
	return ss.CreateMessage(ctx, p)
}
