package golden

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/fixture/oauthfixture"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/oauth"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
	"golang.org/x/tools/txtar"
)

// runFile runs the golden scenario in file and compares (or, with update,
// rewrites) its output sections.
func runFile(t *testing.T, file string, update bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	a := txtar.Parse(data)
	got := playArchive(t, a)
	if update {
		for _, name := range outputSections {
			setSection(a, name, got[name])
		}
		if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, report := range compareOutputs(filepath.Base(file), a, got) {
		t.Error(report)
	}
}

// compareOutputs returns one report per output section of a that differs from
// got, each with a cmp.Diff of the section's lines.
func compareOutputs(name string, a *txtar.Archive, got map[string]string) []string {
	var reports []string
	for _, sec := range outputSections {
		want, _ := section(a, sec)
		if diff := diffText(want, got[sec]); diff != "" {
			reports = append(reports, fmt.Sprintf("%s: section %q mismatch (-want +got):\n%s", name, sec, diff))
		}
	}
	return reports
}

// diffText compares two sections line by line and returns a cmp.Diff, or ""
// when they are equal.
func diffText(want, got string) string {
	return cmp.Diff(lines(want), lines(got))
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// playArchive runs the scenario of a and returns its output sections. It fails t
// when the scenario is malformed, a step fails, the recorded history breaks
// an ordering invariant, or a replay of the history disagrees with the live
// manager.
func playArchive(t *testing.T, a *txtar.Archive) map[string]string {
	t.Helper()
	cfgText, ok := section(a, sectionConfig)
	if !ok {
		t.Fatalf("no %q section", sectionConfig)
	}
	var cfg scenario
	dec := json.NewDecoder(strings.NewReader(cfgText))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%s: %v", sectionConfig, err)
	}
	scriptText, _ := section(a, sectionScript)
	script, err := parseScript(scriptText)
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, cfg)
	return r.play(script)
}

// runner runs one scenario.
type runner struct {
	t         *testing.T
	ctx       context.Context
	share     *shareRig // nil unless the scenario shares
	st        *memory.Store
	j         *journal.Journal
	m         *manager.Manager
	clock     *clock
	decided   *gateLog
	rec       *recorder
	logs      *logRecorder
	cwd       string
	norm      *normalizer
	gate      time.Duration
	reconnect manager.ReconnectPolicy
	configs   map[string]events.ServerConfig
	sources   map[string]events.SourceMeta

	results []string
	// mark is the last sequence recorded when the latest action step
	// began; "wait" without "#N" looks at later events only.
	mark uint64
	// gateMark is the number of decided gates when the latest connect or
	// reload began.
	gateMark int64
	async    map[string]*pending
	// cancel ends r.ctx; wg counts the background steps, which end with it.
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards what background steps share with the script's goroutine.
	mu    sync.Mutex
	gates map[string]*fixture.Gate
	// known holds every tool the manager has exposed so far, by name, so
	// a script can call a tool that has since disappeared.
	known map[string]*manager.Tool
}

// pending is a step running in the background.
type pending struct {
	step step
	done chan struct{}
	out  []string
	err  error
}

func newRunner(t *testing.T, cfg scenario) *runner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*stepTimeout)
	t.Cleanup(cancel)
	r := &runner{
		cancel:  cancel,
		t:       t,
		ctx:     ctx,
		st:      memory.New(),
		clock:   &clock{},
		decided: newGateLog(),
		logs:    newLogRecorder(),
		cwd:     t.TempDir(),
		gates:   map[string]*fixture.Gate{},
		configs: map[string]events.ServerConfig{},
		sources: map[string]events.SourceMeta{},
		async:   map[string]*pending{},
		known:   map[string]*manager.Tool{},
	}
	r.gate = time.Minute
	// A reconnect's delay is held (an hour, never reached): the attempt
	// starts at the script's reconnect-now step, so what happens while a
	// server waits to reconnect is in the scripted order on any machine.
	r.reconnect = manager.ReconnectPolicy{Initial: time.Hour, Max: time.Hour, NoJitter: true, Disabled: cfg.Reconnect == "off"}
	if cfg.Gate != "" {
		d, err := time.ParseDuration(cfg.Gate)
		if err != nil {
			t.Fatalf("%s: gate: %v", sectionConfig, err)
		}
		r.gate = d
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r.norm = newNormalizer(r.cwd, exe)
	if cfg.Share != nil {
		r.setupShare(cfg.Share)
	}

	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		spec := cfg.Servers[name]
		c := spec.ServerConfig.Clone()
		// "beta#2" is a second configuration of server beta.
		c.Name, _, _ = strings.Cut(name, "#")
		if spec.Serve == "oauth" {
			srv, err := oauthfixture.Start(nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			c.Type, c.URL = events.TransportHTTP, srv.URL
		}
		if spec.Fixture != nil {
			behaviours := make([]string, len(spec.Fixture))
			for i, b := range spec.Fixture {
				behaviours[i] = r.expandGates(b)
			}
			switch spec.Serve {
			case "":
				c.Command, c.Args = fixturetest.Command(t, behaviours...)
			case "http":
				c.Type, c.URL = events.TransportHTTP, fixturetest.ServeHTTP(t, behaviours...)
			case "sse":
				c.Type, c.URL = events.TransportSSE, fixturetest.ServeSSE(t, behaviours...)
			default:
				t.Fatalf("%s: server %s: serve %q (want http or sse)", sectionConfig, name, spec.Serve)
			}
		}
		r.configs[name] = c
		src := events.SourceMeta{Provider: loader.ProviderNative, ProviderName: "mcplife", Path: filepath.Join(r.cwd, ".mcplife", "mcp.json"), Level: events.LevelProject}
		if spec.Source != nil {
			src = *spec.Source
			src.Path = strings.ReplaceAll(src.Path, "$CWD", r.cwd)
		}
		r.sources[c.Name] = src
	}

	j, err := journal.New(r.st, &journal.Options{Now: r.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	r.j = j
	t.Cleanup(func() { j.Close() })

	// The tool cache as an earlier session left it.
	for _, name := range slices.Sorted(maps.Keys(cfg.Cache)) {
		c, ok := r.configs[name]
		if !ok {
			t.Fatalf("%s: cache for unknown server %q", sectionConfig, name)
		}
		defs := make([]events.ToolDef, 0, len(cfg.Cache[name]))
		for _, tool := range cfg.Cache[name] {
			defs = append(defs, events.ToolDef{Name: tool, Description: "cached " + tool, InputSchema: json.RawMessage(`{"type":"object"}`)})
		}
		listed := &events.ToolsListed{
			Server: c.Name, ConfigHash: c.Hash(), Tools: defs, ToolsHash: events.HashTools(defs),
			Count: len(defs), Cause: events.CauseInitial,
		}
		if ttl, ok := cfg.CacheTTL[name]; ok {
			listed.CacheHints = events.CacheHints{TTLMs: ttl, CacheScope: "public"}
		}
		_, err := j.Append(ctx, "earlier-session", listed)
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, name := range slices.Sorted(maps.Keys(cfg.CacheResources)) {
		c, ok := r.configs[name]
		if !ok {
			t.Fatalf("%s: cached resources for unknown server %q", sectionConfig, name)
		}
		var res []events.ResourceDef
		for _, uri := range cfg.CacheResources[name] {
			res = append(res, events.ResourceDef{URI: uri, Name: "cached " + uri})
		}
		if _, err := j.Append(ctx, "earlier-session", &events.ResourcesListed{
			Server: c.Name, ConfigHash: c.Hash(), Resources: res, Count: len(res), Cause: events.CauseInitial,
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.CachePrompts)) {
		c, ok := r.configs[name]
		if !ok {
			t.Fatalf("%s: cached prompts for unknown server %q", sectionConfig, name)
		}
		var prompts []events.PromptDef
		for _, p := range cfg.CachePrompts[name] {
			prompts = append(prompts, events.PromptDef{Name: p, Description: "cached " + p})
		}
		if _, err := j.Append(ctx, "earlier-session", &events.PromptsListed{
			Server: c.Name, ConfigHash: c.Hash(), Prompts: prompts, Count: len(prompts), Cause: events.CauseInitial,
		}); err != nil {
			t.Fatal(err)
		}
	}

	r.rec = newRecorder(t, ctx, j)
	if _, err := j.Append(ctx, sessionID, &events.SessionStarted{Cwd: r.cwd, Gate: r.gate}); err != nil {
		t.Fatal(err)
	}
	// OAuth tokens stay in memory; a login's browser follows the
	// redirects of the fixture's authorization server.
	authorizer, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore(), Open: oauthfixture.Browser})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(j, sessionID, &manager.Options{
		Cwd:       r.cwd,
		Gate:      r.gate,
		Reconnect: r.reconnect,
		Logger:    slog.New(r.logs),
		OnGate:    r.decided.add,
		Auth:      manager.AuthOptions{OAuth: authorizer},
		Share:     r.shareOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	t.Cleanup(func() {
		// Closing twice is allowed: this only matters when the scenario
		// failed before its own teardown.
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		m.Close(ctx)
	})
	// Runs first: a scenario that failed may leave background steps
	// behind; they end with the runner's context.
	t.Cleanup(func() {
		r.cancel()
		r.wg.Wait()
	})
	return r
}

// expandGates replaces a behaviour value "@name" by the path of the
// scenario's gate name, creating the gate on first use.
func (r *runner) expandGates(behaviour string) string {
	key, value, ok := strings.Cut(behaviour, "=")
	if !ok || !strings.HasPrefix(value, "@") {
		return behaviour
	}
	return key + "=" + r.gateNamed(value[1:]).Path()
}

func (r *runner) gateNamed(name string) *fixture.Gate {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.gates[name]
	if !ok {
		g = fixturetest.NewGate(r.t)
		r.gates[name] = g
		r.norm.addGate(name, g.Path())
	}
	return g
}

// play runs the script, tears the session down and returns the output
// sections.
func (r *runner) play(script []step) map[string]string {
	t := r.t
	t.Helper()
	// Create every gate the script names now, on the test's goroutine:
	// background steps only look them up.
	for _, s := range script {
		if s.Inner != nil {
			s = *s.Inner
		}
		switch s.Verb {
		case "release":
			for _, name := range s.Args {
				r.gateNamed(name)
			}
		case "reached":
			if len(s.Args) > 0 {
				r.gateNamed(s.Args[0])
			}
		case "call":
			r.expandGateRefs(s.Rest)
		}
	}
	for _, s := range script {
		r.results = append(r.results, "> "+s.Line)
		out, err := r.do(s)
		if err != nil {
			t.Fatalf("step %q: %v\nevents so far:\n%s", s.Line, err, strings.Join(r.eventLines(r.history()), "\n"))
		}
		for _, o := range out {
			r.results = append(r.results, "  "+r.norm.text(o))
		}
		r.remember()
		r.checkReplay("after step " + strconv.Quote(s.Line))
	}
	for id, p := range r.async {
		select {
		case <-p.done:
		default:
			t.Fatalf("async step %s (%s) was never joined", id, p.step.Line)
		}
	}
	view := r.viewLines()

	// The session ends: the caller owns the shutdown.
	ctx, cancel := context.WithTimeout(r.ctx, stepTimeout)
	defer cancel()
	if err := r.m.Close(ctx); err != nil {
		r.results = append(r.results, "> close", "  error: "+r.norm.text(err.Error()))
	}
	if _, err := r.j.Append(ctx, sessionID, &events.SessionClosed{Reason: "scenario finished"}); err != nil {
		t.Fatal(err)
	}
	r.checkReplay("after close")
	r.endShare(ctx)
	if n := len(r.m.Tools()); n != 0 {
		t.Errorf("after close: %d tools left", n)
	}

	history := r.history()
	for _, v := range verify.Session(sessionID, history) {
		t.Errorf("invariant broken: %s", v)
	}
	return map[string]string{
		sectionEvents:  strings.Join(append(r.eventLines(history), r.sharedEventLines()...), "\n"),
		sectionResults: strings.Join(r.results, "\n"),
		sectionView:    strings.Join(view, "\n"),
		sectionLog:     strings.Join(r.logs.lines(r.norm), "\n"),
	}
}

// do runs one step and returns its output lines.
func (r *runner) do(s step) ([]string, error) {
	if stepVerbs[s.Verb] || shareActs(s) {
		r.mark = r.lastSeq()
	}
	switch s.Verb {
	case "async":
		id := s.Args[0]
		if _, dup := r.async[id]; dup {
			return nil, fmt.Errorf("async id %s used twice", id)
		}
		inner := *s.Inner
		if stepVerbs[inner.Verb] {
			r.mark = r.lastSeq()
		}
		if inner.Verb == "connect" || inner.Verb == "reload" || inner.Verb == "reload-failing" {
			r.gateMark = r.decided.count()
		}
		p := &pending{step: inner, done: make(chan struct{})}
		r.async[id] = p
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer close(p.done)
			p.out, p.err = r.act(inner)
		}()
		return nil, nil
	case "join":
		if len(s.Args) != 1 {
			return nil, errors.New("want join ID")
		}
		p, ok := r.async[s.Args[0]]
		if !ok {
			return nil, fmt.Errorf("no async step %s", s.Args[0])
		}
		select {
		case <-p.done:
		case <-time.After(stepTimeout):
			return nil, fmt.Errorf("async step %s (%s) did not finish", s.Args[0], p.step.Line)
		}
		if p.err != nil {
			return nil, fmt.Errorf("async %s (%s): %w", s.Args[0], p.step.Line, p.err)
		}
		return append([]string{"(" + p.step.Line + ")"}, p.out...), nil
	}
	if s.Verb == "connect" || s.Verb == "reload" || s.Verb == "reload-failing" {
		r.gateMark = r.decided.count()
	}
	return r.act(s)
}

// act runs a step that may also run in the background. It must not touch
// the runner's step bookkeeping (mark, async, results).
func (r *runner) act(s step) ([]string, error) {
	ctx, cancel := context.WithTimeout(r.ctx, stepTimeout)
	defer cancel()
	switch s.Verb {
	case "connect":
		cfgs, err := r.configsOf(s.Args)
		if err != nil {
			return nil, err
		}
		res, err := r.m.ConnectServers(ctx, cfgs, r.sources)
		return r.formatConnect(res, err), nil
	case "reload":
		cfgs, err := r.configsOf(s.Args)
		if err != nil {
			return nil, err
		}
		res, err := r.m.Reload(ctx, func(context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
			return cfgs, maps.Clone(r.sources), nil
		})
		return r.formatConnect(res, err), nil
	case "reload-failing":
		// The loader fails as a whole when it has no home directory.
		res, err := r.m.Reload(ctx, func(ctx context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
			d, err := loader.LoadConfigs(ctx, loader.Options{Cwd: r.cwd})
			if err != nil {
				return nil, nil, err
			}
			cfgs, srcs := d.Configs()
			return slices.Collect(maps.Values(cfgs)), srcs, nil
		})
		return r.formatConnect(res, err), nil
	case "disconnect":
		if len(s.Args) != 1 {
			return nil, errors.New("want disconnect NAME")
		}
		return []string{errText(r.m.DisconnectServer(ctx, s.Args[0]))}, nil
	case "login":
		if len(s.Args) != 1 {
			return nil, errors.New("want login NAME")
		}
		res, err := r.m.Login(ctx, s.Args[0])
		if err != nil {
			return []string{errText(err)}, nil
		}
		return []string{fmt.Sprintf("logged in scopes=[%s]", strings.Join(res.Scopes, " "))}, nil
	case "disconnect-all":
		return []string{errText(r.m.DisconnectAll(ctx))}, nil
	case "reconnect-now":
		if len(s.Args) != 1 {
			return nil, errors.New("want reconnect-now NAME")
		}
		return []string{errText(r.m.ReconnectNow(s.Args[0]))}, nil
	case "call":
		name, args, _ := strings.Cut(s.Rest, " ")
		tool := r.tool(name)
		if tool == nil {
			return nil, fmt.Errorf("no tool %s has been exposed", name)
		}
		var raw json.RawMessage
		if args = strings.TrimSpace(args); args != "" {
			raw = json.RawMessage(r.expandGateRefs(args))
			if !json.Valid(raw) {
				return nil, fmt.Errorf("arguments %s are not JSON", args)
			}
		}
		res, err := tool.Call(ctx, raw)
		if err != nil {
			return []string{"error: " + err.Error()}, nil
		}
		return []string{formatCall(res)}, nil
	case "release":
		for _, name := range s.Args {
			r.gateNamed(name).Release()
		}
		return nil, nil
	case "subscribe":
		if len(s.Args) != 2 {
			return nil, errors.New("want subscribe SERVER URI")
		}
		return []string{errText(r.m.SubscribeResource(ctx, s.Args[0], s.Args[1]))}, nil
	case "read":
		if len(s.Args) != 2 {
			return nil, errors.New("want read SERVER URI")
		}
		res, err := r.m.ReadResource(ctx, s.Args[0], s.Args[1])
		if err != nil {
			return []string{"error: " + err.Error()}, nil
		}
		return formatRead(res), nil
	case "reached":
		if len(s.Args) < 1 || len(s.Args) > 2 {
			return nil, errors.New("want reached GATE [N]")
		}
		n := 1
		if len(s.Args) == 2 {
			var err error
			if n, err = strconv.Atoi(s.Args[1]); err != nil {
				return nil, err
			}
		}
		return nil, r.gateNamed(s.Args[0]).WaitReached(ctx, n)
	case "wait":
		return nil, r.waitOn(ctx, r.rec, s.Args)
	case "share-host":
		return r.shareHostStep(ctx, s)
	case "host2":
		return r.host2Step(ctx, s)
	case "wait-gate":
		return nil, r.decided.wait(ctx, r.gateMark)
	case "tools":
		return r.toolLines(), nil
	case "status":
		var parts []string
		for _, name := range s.Args {
			parts = append(parts, name+"="+string(r.m.Status(name)))
		}
		return []string{strings.Join(parts, " ")}, nil
	case "watch-status":
		if len(s.Args) != 2 {
			return nil, errors.New("want watch-status NAME STATUS")
		}
		return nil, r.watchStatus(ctx, s.Args[0], s.Args[1])
	}
	return nil, fmt.Errorf("step %s cannot run here", s.Verb)
}

func (r *runner) configsOf(names []string) ([]events.ServerConfig, error) {
	var cfgs []events.ServerConfig
	for _, name := range names {
		c, ok := r.configs[name]
		if !ok {
			return nil, fmt.Errorf("no server %q in %s", name, sectionConfig)
		}
		cfgs = append(cfgs, c.Clone())
	}
	return cfgs, nil
}

var gateRef = regexp.MustCompile(`"@([A-Za-z0-9_-]+)"`)

// expandGateRefs replaces JSON strings "@name" by the path of gate name.
func (r *runner) expandGateRefs(s string) string {
	return gateRef.ReplaceAllStringFunc(s, func(m string) string {
		b, _ := json.Marshal(r.gateNamed(m[2 : len(m)-1]).Path())
		return string(b)
	})
}

func (r *runner) tool(name string) *manager.Tool {
	for _, t := range r.m.Tools() {
		if t.Name == name {
			return t
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.known[name]
}

// remember notes the tools exposed now.
func (r *runner) remember() {
	tools := r.m.Tools()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range tools {
		r.known[t.Name] = t
	}
}

// waitOn handles "wait TYPE [SERVER] [#N]" on the session rec follows:
// without #N it waits for the first matching event after the mark, with
// #N for the N-th matching event of the session.
func (r *runner) waitOn(ctx context.Context, rec *recorder, args []string) error {
	var typ, server string
	nth := 0
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "#"):
			n, err := strconv.Atoi(a[1:])
			if err != nil || n < 1 {
				return fmt.Errorf("bad occurrence %q", a)
			}
			nth = n
		case typ == "":
			typ = a
		case server == "":
			server = a
		default:
			return errors.New("want wait TYPE [SERVER] [#N]")
		}
	}
	if events.SchemaOf(typ) == 0 {
		return fmt.Errorf("unknown event type %q", typ)
	}
	mark := r.mark
	return rec.waitFor(ctx, func(envs []events.Envelope) bool {
		seen := 0
		for _, env := range envs {
			if env.Type != typ {
				continue
			}
			if server != "" {
				ev, err := events.Decode(env)
				if err != nil || events.ServerOf(ev) != server {
					continue
				}
			}
			seen++
			if nth > 0 && seen == nth || nth == 0 && env.Seq > mark {
				return true
			}
		}
		return false
	})
}

// watchStatus waits, through Manager.Watch, until the server has status.
func (r *runner) watchStatus(ctx context.Context, server, status string) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates, err := r.m.Watch(wctx)
	if err != nil {
		return err
	}
	for string(r.m.Status(server)) != status {
		select {
		case _, ok := <-updates:
			if !ok {
				return fmt.Errorf("watch ended before %s was %s", server, status)
			}
		case <-ctx.Done():
			return fmt.Errorf("%s is %s, not %s: %w", server, r.m.Status(server), status, ctx.Err())
		}
	}
	return nil
}
