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
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

// Section names of a golden file. The first two are inputs; the others are
// written by -update and compared otherwise.
const (
	SectionConfig  = "config.json"
	SectionScript  = "script"
	SectionEvents  = "events"
	SectionResults = "results"
	SectionView    = "view"
	SectionLog     = "log"
)

// outputSections are compared with the recorded run, in file order.
var outputSections = []string{SectionEvents, SectionResults, SectionView, SectionLog}

// Session is the session id every scenario records to.
const Session = "golden"

// stepTimeout bounds every wait of a script step, so a scenario whose
// script does not match the manager's behaviour fails instead of hanging.
const stepTimeout = time.Minute

// Config is the config.json section of a golden file.
type Config struct {
	// Gate is the manager's startup gate, in Go syntax (default 1m: every
	// outcome of a round is then known before it elapses).
	Gate string `json:"gate"`
	// Servers are the server configurations a script can connect, by
	// name. A key "NAME#N" is another configuration of server NAME.
	Servers map[string]ServerSpec `json:"servers"`
	// Cache seeds the tool cache with a list of tool names per server, as
	// an earlier session would have recorded for the same configuration.
	Cache map[string][]string `json:"cache"`
}

// ServerSpec is one server of a scenario: an events.ServerConfig (JSON
// field names as in the event's config) plus how to run a fixture for it.
type ServerSpec struct {
	events.ServerConfig
	// Fixture, when set, makes the server a fixture with these behaviours
	// (see internal/fixture). A value "@name" after "=" is replaced by the
	// path of the scenario's gate called name.
	Fixture []string `json:"fixture,omitempty"`
	// Serve runs the fixture in the test process over "http" (streamable
	// HTTP) or "sse" instead of as a stdio child.
	Serve string `json:"serve,omitempty"`
	// Source overrides the default source metadata (mcplife, user level).
	Source *events.SourceMeta `json:"source,omitempty"`
}

// Step is one line of a scenario's script.
type Step struct {
	Line string // as written, trimmed
	Verb string
	Args []string
	Rest string // the text after the verb
	// Async is set for "async ID: STEP": Inner is run in the background
	// under the id in Args[0].
	Inner *Step
}

// ParseScript parses the script section: one step per line, blank lines
// and lines starting with # ignored.
func ParseScript(text string) ([]Step, error) {
	var steps []Step
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseStep(line)
		if err != nil {
			return nil, fmt.Errorf("script line %d: %w", i+1, err)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func parseStep(line string) (Step, error) {
	verb, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	s := Step{Line: line, Verb: verb, Rest: rest, Args: strings.Fields(rest)}
	if verb == "async" {
		id, inner, ok := strings.Cut(rest, ":")
		id = strings.TrimSpace(id)
		if !ok || id == "" || strings.ContainsAny(id, " \t") {
			return s, errors.New(`want "async ID: STEP"`)
		}
		in, err := parseStep(strings.TrimSpace(inner))
		if err != nil {
			return s, err
		}
		if in.Verb == "async" || in.Verb == "join" {
			return s, fmt.Errorf("async %s cannot run in the background", in.Verb)
		}
		s.Args, s.Inner = []string{id}, &in
		return s, nil
	}
	if _, ok := stepVerbs[verb]; !ok {
		return s, fmt.Errorf("unknown step %q (known: %s)", verb, strings.Join(slices.Sorted(maps.Keys(stepVerbs)), ", "))
	}
	return s, nil
}

// stepVerbs lists the steps; the value says whether the step is an action
// (it moves the mark that a later "wait" starts after).
var stepVerbs = map[string]bool{
	"connect":        true,
	"reload":         true,
	"reload-failing": true,
	"disconnect":     true,
	"disconnect-all": true,
	"call":           true,
	"release":        true,
	"async":          true,
	"reached":        false,
	"wait":           false,
	"wait-gate":      false,
	"join":           false,
	"tools":          false,
	"status":         false,
	"watch-status":   false,
}

// Run runs the golden scenario in file and compares (or, with update,
// rewrites) its output sections.
func Run(t *testing.T, file string, update bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	a := ParseArchive(data)
	got := Play(t, a)
	if update {
		for _, name := range outputSections {
			a.Set(name, got[name])
		}
		if err := os.WriteFile(file, a.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, report := range Compare(filepath.Base(file), a, got) {
		t.Error(report)
	}
}

// Compare returns one report per output section of a that differs from
// got, each with a cmp.Diff of the section's lines.
func Compare(name string, a *Archive, got map[string]string) []string {
	var reports []string
	for _, section := range outputSections {
		want, _ := a.Get(section)
		if diff := Diff(want, got[section]); diff != "" {
			reports = append(reports, fmt.Sprintf("%s: section %q mismatch (-want +got):\n%s", name, section, diff))
		}
	}
	return reports
}

// Diff compares two sections line by line and returns a cmp.Diff, or ""
// when they are equal.
func Diff(want, got string) string {
	return cmp.Diff(lines(want), lines(got))
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Play runs the scenario of a and returns its output sections. It fails t
// when the scenario is malformed, a step fails, the recorded history breaks
// an ordering invariant, or a replay of the history disagrees with the live
// manager.
func Play(t *testing.T, a *Archive) map[string]string {
	t.Helper()
	cfgText, ok := a.Get(SectionConfig)
	if !ok {
		t.Fatalf("no %q section", SectionConfig)
	}
	var cfg Config
	dec := json.NewDecoder(strings.NewReader(cfgText))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%s: %v", SectionConfig, err)
	}
	scriptText, _ := a.Get(SectionScript)
	script, err := ParseScript(scriptText)
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, cfg)
	return r.play(script)
}

// runner runs one scenario.
type runner struct {
	t       *testing.T
	ctx     context.Context
	st      *memory.Store
	j       *journal.Journal
	m       *manager.Manager
	clock   *clock
	decided *gateLog
	rec     *recorder
	logs    *logRecorder
	cwd     string
	norm    *normalizer
	gate    time.Duration
	configs map[string]events.ServerConfig
	sources map[string]events.SourceMeta

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
	step Step
	done chan struct{}
	out  []string
	err  error
}

func newRunner(t *testing.T, cfg Config) *runner {
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
	if cfg.Gate != "" {
		d, err := time.ParseDuration(cfg.Gate)
		if err != nil {
			t.Fatalf("%s: gate: %v", SectionConfig, err)
		}
		r.gate = d
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r.norm = newNormalizer(r.cwd, exe)

	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		spec := cfg.Servers[name]
		c := spec.ServerConfig.Clone()
		// "beta#2" is a second configuration of server beta.
		c.Name, _, _ = strings.Cut(name, "#")
		if spec.Fixture != nil {
			behaviours := make([]string, len(spec.Fixture))
			for i, b := range spec.Fixture {
				behaviours[i] = r.expandGates(b)
			}
			switch spec.Serve {
			case "":
				c.Command, c.Args = fixture.Command(t, behaviours...)
			case "http":
				c.Type, c.URL = events.TransportHTTP, fixture.ServeHTTP(t, behaviours...)
			case "sse":
				c.Type, c.URL = events.TransportSSE, fixture.ServeSSE(t, behaviours...)
			default:
				t.Fatalf("%s: server %s: serve %q (want http or sse)", SectionConfig, name, spec.Serve)
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
			t.Fatalf("%s: cache for unknown server %q", SectionConfig, name)
		}
		defs := make([]events.ToolDef, 0, len(cfg.Cache[name]))
		for _, tool := range cfg.Cache[name] {
			defs = append(defs, events.ToolDef{Name: tool, Description: "cached " + tool, InputSchema: json.RawMessage(`{"type":"object"}`)})
		}
		_, err := j.Append(ctx, "earlier-session", &events.ToolsListed{
			Server: c.Name, ConfigHash: c.Hash(), Tools: defs, ToolsHash: events.HashTools(defs),
			Count: len(defs), Cause: events.CauseInitial,
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	r.rec = newRecorder(t, ctx, j)
	if _, err := j.Append(ctx, Session, &events.SessionStarted{Cwd: r.cwd, Gate: r.gate}); err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(j, Session, &manager.Options{
		Cwd:    r.cwd,
		Gate:   r.gate,
		Logger: slog.New(r.logs),
		OnGate: r.decided.add,
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
		g = fixture.NewGate(r.t)
		r.gates[name] = g
		r.norm.addGate(name, g.Path())
	}
	return g
}

// play runs the script, tears the session down and returns the output
// sections.
func (r *runner) play(script []Step) map[string]string {
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
	if _, err := r.j.Append(ctx, Session, &events.SessionClosed{Reason: "scenario finished"}); err != nil {
		t.Fatal(err)
	}
	r.checkReplay("after close")
	if n := len(r.m.Tools()); n != 0 {
		t.Errorf("after close: %d tools left", n)
	}

	history := r.history()
	for _, v := range verify.Session(Session, history) {
		t.Errorf("invariant broken: %s", v)
	}
	return map[string]string{
		SectionEvents:  strings.Join(r.eventLines(history), "\n"),
		SectionResults: strings.Join(r.results, "\n"),
		SectionView:    strings.Join(view, "\n"),
		SectionLog:     strings.Join(r.logs.lines(r.norm), "\n"),
	}
}

// do runs one step and returns its output lines.
func (r *runner) do(s Step) ([]string, error) {
	if stepVerbs[s.Verb] {
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
func (r *runner) act(s Step) ([]string, error) {
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
	case "disconnect-all":
		return []string{errText(r.m.DisconnectAll(ctx))}, nil
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
		return nil, r.wait(ctx, s)
	case "wait-gate":
		return nil, r.decided.wait(ctx, r.gateMark)
	case "tools":
		return r.toolLines(), nil
	case "status":
		var parts []string
		for _, name := range s.Args {
			parts = append(parts, name+"="+r.m.Status(name))
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
			return nil, fmt.Errorf("no server %q in %s", name, SectionConfig)
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

// wait handles "wait TYPE [SERVER] [#N]": without #N it waits for the first
// matching event after the mark, with #N for the N-th matching event of
// the session.
func (r *runner) wait(ctx context.Context, s Step) error {
	var typ, server string
	nth := 0
	for _, a := range s.Args {
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
	return r.rec.waitFor(ctx, func(envs []events.Envelope) bool {
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
	for r.m.Status(server) != status {
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

// lastSeq returns the store's last sequence (the subscription may lag).
func (r *runner) lastSeq() uint64 {
	seq, err := r.st.LastSeq(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return seq
}

// history returns the session's stored events.
func (r *runner) history() []events.Envelope {
	var out []events.Envelope
	for env, err := range r.st.ReadStream(context.Background(), Session, 1) {
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// eventLines describes every event of history, one line each, with
// correlation ids renamed c1, c2, … by first appearance.
func (r *runner) eventLines(history []events.Envelope) []string {
	corr := map[string]string{}
	out := make([]string, 0, len(history))
	for _, env := range history {
		line := env.Type
		if id := env.CorrelationID; id != "" {
			if _, ok := corr[id]; !ok {
				corr[id] = "c" + strconv.Itoa(len(corr)+1)
			}
			line += " [" + corr[id] + "]"
		}
		ev, err := events.Decode(env)
		if err != nil {
			line += " (undecodable: " + err.Error() + ")"
		} else if d := events.Describe(ev); d != "" {
			line += " " + d
		}
		out = append(out, r.norm.text(line))
	}
	return out
}

// checkReplay compares the live manager with a view rebuilt from the
// stored history up to the same sequence. Background steps may record
// events meanwhile, so the manager is read until two views agree on their
// sequence.
func (r *runner) checkReplay(when string) {
	r.t.Helper()
	type exposed struct {
		Name, Server, Original string
		Deferred               bool
	}
	var (
		live        *projector.ToolView
		fromManager []exposed
		statuses    map[string]string
	)
	for attempt := 0; ; attempt++ {
		live = r.m.View()
		fromManager = fromManager[:0]
		for _, t := range r.m.Tools() {
			fromManager = append(fromManager, exposed{t.Name, t.Server, t.Original, t.Deferred})
		}
		statuses = map[string]string{}
		for _, s := range live.Servers() {
			statuses[s.Name] = r.m.Status(s.Name)
		}
		if r.m.View().LastSeq() == live.LastSeq() {
			break
		}
		if attempt == 100 {
			r.t.Logf("%s: the manager kept recording; replay check skipped", when)
			return
		}
	}
	replay := projector.NewToolView(Session)
	for _, env := range r.history() {
		if env.Seq <= live.LastSeq() {
			replay.Apply(env)
		}
	}
	if d := cmp.Diff(live.Servers(), replay.Servers()); d != "" {
		r.t.Errorf("%s: replayed servers differ from the live manager (-live +replay):\n%s", when, d)
	}
	if d := cmp.Diff(live.Tools(), replay.Tools()); d != "" {
		r.t.Errorf("%s: replayed tools differ from the live manager (-live +replay):\n%s", when, d)
	}
	var fromReplay []exposed
	for _, t := range replay.Tools() {
		fromReplay = append(fromReplay, exposed{t.Name, t.Server, t.Original, t.Deferred})
	}
	if d := cmp.Diff(fromManager, fromReplay); d != "" {
		r.t.Errorf("%s: Manager.Tools differs from the replay (-manager +replay):\n%s", when, d)
	}
	for _, s := range replay.Servers() {
		if got := statuses[s.Name]; got != s.Status {
			r.t.Errorf("%s: status of %s: manager %s, replay %s", when, s.Name, got, s.Status)
		}
	}
}

// viewLines describes the manager's servers and tools.
func (r *runner) viewLines() []string {
	v := r.m.View()
	var out []string
	for _, s := range v.Servers() {
		names := make([]string, len(s.Tools))
		for i, d := range s.Tools {
			names[i] = d.Name
		}
		line := fmt.Sprintf("server %s status=%s attempt=%d deferred=%t tools=[%s]", s.Name, s.Status, s.Attempt, s.Deferred, strings.Join(names, " "))
		if s.DisconnectReason != "" {
			line += " disconnect=" + s.DisconnectReason
		}
		if s.Error != "" {
			line += fmt.Sprintf(" error=%q", s.Error)
		}
		out = append(out, r.norm.text(line))
	}
	out = append(out, r.toolLines()...)
	return out
}

func (r *runner) toolLines() []string {
	var out []string
	for _, t := range r.m.Tools() {
		line := fmt.Sprintf("tool %s = %s/%s path=%q", t.Name, t.Server, t.Original, t.Path())
		if t.Deferred {
			line += " deferred"
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		out = append(out, "no tools")
	}
	return out
}

// formatConnect describes a ConnectServers or Reload result.
func (r *runner) formatConnect(res *manager.ConnectResult, err error) []string {
	var out []string
	if err != nil {
		out = append(out, "error: "+err.Error())
	}
	if res == nil {
		return out
	}
	if res.Gate.Round != 0 {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(res.Gate.Outcomes)) {
			parts = append(parts, name+"="+res.Gate.Outcomes[name])
		}
		out = append(out, fmt.Sprintf("gate round=%d outcomes=[%s]", res.Gate.Round, strings.Join(parts, " ")))
	}
	out = append(out, fmt.Sprintf("connected [%s]", strings.Join(res.Connected, " ")))
	for _, name := range slices.Sorted(maps.Keys(res.Errors)) {
		out = append(out, fmt.Sprintf("error %s: %s", name, res.Errors[name]))
	}
	var tools []string
	for _, t := range res.Tools {
		if t.Deferred {
			tools = append(tools, t.Name+"(deferred)")
		} else {
			tools = append(tools, t.Name)
		}
	}
	out = append(out, fmt.Sprintf("tools [%s]", strings.Join(tools, " ")))
	return out
}

func formatCall(res *manager.CallResult) string {
	text := res.Text()
	if len(text) > 300 {
		text = text[:300] + fmt.Sprintf("…(%d bytes)", len(text))
	}
	s := fmt.Sprintf("isError=%t text=%q", res.IsError, text)
	if len(res.StructuredContent) > 0 {
		s += " structured=" + string(res.StructuredContent)
	}
	return s
}

func errText(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

// normalizer replaces what differs between runs (temporary directories,
// the test binary, gate paths, ports) with stable names.
type normalizer struct {
	mu    sync.Mutex
	pairs []string // old, new; longest old first when built
	repl  *strings.Replacer
}

var (
	portPattern = regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1\]):[0-9]+`)
	tmpPattern  = regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/[^\s"'\]\)]*`)
)

func newNormalizer(cwd, exe string) *normalizer {
	n := &normalizer{}
	n.add(cwd, "$CWD")
	n.add(exe, "$FIXTURE")
	return n
}

func (n *normalizer) add(old, new string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pairs = append(n.pairs, old, new)
	n.repl = nil
}

func (n *normalizer) addGate(name, path string) { n.add(path, "@"+name) }

func (n *normalizer) text(s string) string {
	n.mu.Lock()
	if n.repl == nil {
		type pair struct{ old, new string }
		ps := make([]pair, 0, len(n.pairs)/2)
		for i := 0; i < len(n.pairs); i += 2 {
			ps = append(ps, pair{n.pairs[i], n.pairs[i+1]})
		}
		slices.SortStableFunc(ps, func(a, b pair) int { return len(b.old) - len(a.old) })
		flat := make([]string, 0, len(n.pairs))
		for _, p := range ps {
			flat = append(flat, p.old, p.new)
		}
		n.repl = strings.NewReplacer(flat...)
	}
	repl := n.repl
	n.mu.Unlock()
	s = repl.Replace(s)
	s = tmpPattern.ReplaceAllString(s, "$$TMP")
	return portPattern.ReplaceAllString(s, "$1:$$PORT")
}

// clock is the injected clock: every reading is one millisecond after the
// previous one, from a fixed epoch, so times and durations in the store do
// not depend on the machine.
type clock struct {
	mu    sync.Mutex
	ticks int64
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticks++
	return epoch.Add(time.Duration(c.ticks) * time.Millisecond)
}

// gateLog counts the startup gates that decided their outcomes
// (manager.Options.OnGate). A script that waits for the gate of its
// latest connect ("wait-gate") and only then releases a blocked server
// forces the outcome "awaited": the manager records nothing observable
// at that moment.
type gateLog struct {
	mu      sync.Mutex
	n       int64
	changed chan struct{}
}

func newGateLog() *gateLog { return &gateLog{changed: make(chan struct{})} }

// add is the manager's OnGate hook; it does not block.
func (g *gateLog) add(manager.GateOutcome) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *gateLog) count() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// wait waits until more than after gates decided in total.
func (g *gateLog) wait(ctx context.Context, after int64) error {
	for {
		g.mu.Lock()
		n, changed := g.n, g.changed
		g.mu.Unlock()
		if n > after {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("the startup gate did not decide: %w", ctx.Err())
		}
	}
}

// recorder follows the session through a journal subscription, so script
// steps can wait for events without polling.
type recorder struct {
	mu      sync.Mutex
	envs    []events.Envelope
	changed chan struct{}
	err     error
}

func newRecorder(t *testing.T, ctx context.Context, j *journal.Journal) *recorder {
	t.Helper()
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{Session: Session, FromSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for env := range sub.C() {
			rec.mu.Lock()
			rec.envs = append(rec.envs, env)
			close(rec.changed)
			rec.changed = make(chan struct{})
			rec.mu.Unlock()
		}
		rec.mu.Lock()
		rec.err = fmt.Errorf("subscription ended: %v", sub.Err())
		close(rec.changed)
		rec.changed = make(chan struct{})
		rec.mu.Unlock()
	}()
	t.Cleanup(func() {
		sub.Close()
		<-done
	})
	return rec
}

func (rec *recorder) snapshot() []events.Envelope {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.envs)
}

// waitFor blocks until cond holds for the events received so far.
func (rec *recorder) waitFor(ctx context.Context, cond func([]events.Envelope) bool) error {
	for {
		rec.mu.Lock()
		envs, changed, err := rec.envs, rec.changed, rec.err
		rec.mu.Unlock()
		if cond(envs) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("event not recorded: %w", ctx.Err())
		}
	}
}

// logRecorder is a slog.Handler that keeps warnings and errors. Handlers
// derived with WithAttrs share its records.
type logRecorder struct {
	shared *logRecords
	attrs  []slog.Attr
}

type logRecords struct {
	mu      sync.Mutex
	records []string
}

func newLogRecorder() *logRecorder { return &logRecorder{shared: &logRecords{}} }

func (l *logRecorder) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn
}

// Handle keeps the level, the message and the server and reason
// attributes (errors are in the events already).
func (l *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String() + " " + rec.Message
	add := func(a slog.Attr) bool {
		if a.Key == "server" || a.Key == "reason" {
			line += " " + a.Key + "=" + a.Value.String()
		}
		return true
	}
	for _, a := range l.attrs {
		add(a)
	}
	rec.Attrs(add)
	l.shared.mu.Lock()
	l.shared.records = append(l.shared.records, line)
	l.shared.mu.Unlock()
	return nil
}

func (l *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{shared: l.shared, attrs: append(slices.Clip(l.attrs), attrs...)}
}

func (l *logRecorder) WithGroup(string) slog.Handler { return l }

// lines returns the records, sorted: servers log concurrently.
func (l *logRecorder) lines(n *normalizer) []string {
	l.shared.mu.Lock()
	defer l.shared.mu.Unlock()
	out := make([]string, len(l.shared.records))
	for i, s := range l.shared.records {
		out[i] = n.text(s)
	}
	slices.Sort(out)
	return out
}
