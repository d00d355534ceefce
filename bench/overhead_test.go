package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/store/sqlite"
)

func TestMain(m *testing.M) {
	fixture.RunIfChild()
	if os.Getenv(roleEnv) != "" {
		os.Exit(runRole())
	}
	os.Exit(m.Run())
}

// side is one way of running the same work: "bare" (the go-sdk client
// alone) or mcplife on one store.
type side struct {
	name  string
	st    store.Store // nil for bare
	j     *journal.Journal
	cache *projector.ToolCache
	path  string // SQLite file, "" otherwise
	cwd   string // the managers' working directory
}

// sidesFlag limits the mcplife sides a benchmark runs (the bare side
// always runs, as every ratio is to it): -sides=sqlite-normal runs bare
// and the default SQLite store only, which keeps a profile to the side
// that matters.
var sidesFlag = flag.String("sides", "", "comma-separated mcplife sides to run: memory, sqlite-normal, sqlite-full (default all)")

// protocolFlag is the protocol version both sides offer: the bare client
// and every manager (the manager's default unless set), so that every
// ratio is to the go-sdk client at the version mcplife speaks.
var protocolFlag = flag.String("protocol", manager.DefaultProtocolVersion, "protocol version the bare client and the managers offer")

// legacyProtocol is the version a server that knows only initialize is
// connected at.
const legacyProtocol = "2025-11-25"

// sides returns the bare side and the mcplife sides (memory and SQLite at
// both durability levels, or those -sides names), each mcplife side with
// its own store and journal (as a host process has one), closed when the
// benchmark ends.
func sides(b *testing.B) []*side {
	b.Helper()
	out := []*side{{name: "bare"}}
	for _, name := range []string{"memory", "sqlite-normal", "sqlite-full"} {
		if *sidesFlag == "" || slices.Contains(strings.Split(*sidesFlag, ","), name) {
			out = append(out, newSide(b, name))
		}
	}
	return out
}

// newSide returns the mcplife side of the given name.
func newSide(b *testing.B, name string) *side {
	b.Helper()
	s := &side{name: name, cwd: b.TempDir()}
	switch name {
	case "memory":
		s.st = memory.New()
	case "sqlite-normal", "sqlite-full":
		level := sqlite.Durability(strings.TrimPrefix(name, "sqlite-"))
		s.path = filepath.Join(b.TempDir(), string(level)+".db")
		db, err := sqlite.Open(s.path, &sqlite.Options{Durability: level})
		if err != nil {
			b.Fatal(err)
		}
		s.st = db
	default:
		b.Fatalf("unknown side %q", name)
	}
	j, err := journal.New(s.st, nil)
	if err != nil {
		b.Fatal(err)
	}
	s.j = j
	s.cache = projector.NewToolCache()
	if err := j.Attach(context.Background(), s.cache); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close(); s.st.Close() })
	return s
}

// order returns the sides rotated by round, so no side always goes first.
func order(ss []*side, round int) []*side {
	k := round % len(ss)
	return append(slices.Clone(ss[k:]), ss[:k]...)
}

// samples collects durations per side: one per round, or every one.
type samples map[string][]time.Duration

// scales are the units samples report in.
var scales = map[string]float64{"ms": 1e6, "µs": 1e3}

// report reports each side's median (with unit suffix unit, "ms" or "µs")
// and its median paired ratio to bare.
func (s samples) report(b *testing.B, ss []*side, unit string) {
	for _, sd := range ss {
		if got := s[sd.name]; len(got) > 0 {
			b.ReportMetric(float64(median(got))/scales[unit], sd.name+"-"+unit)
		}
	}
	s.reportRatios(b, ss, "")
}

// reportRatios reports each mcplife side's median paired ratio to bare
// (per round, side/bare) as "SIDE/bare" (with suffix after "bare"), for
// samples holding one duration per round.
func (s samples) reportRatios(b *testing.B, ss []*side, suffix string) {
	bare := s["bare"]
	for _, sd := range ss {
		got := s[sd.name]
		if sd.name == "bare" || len(got) == 0 || len(bare) != len(got) {
			continue
		}
		ratios := make([]float64, len(got))
		for i := range got {
			ratios[i] = float64(got[i]) / float64(bare[i])
		}
		b.ReportMetric(medianF(ratios), sd.name+"/bare"+suffix)
	}
}

// reportTail reports each side's p50 ("SIDE-UNIT") and p99
// ("SIDE-p99-UNIT") over all samples, and the ratio of each mcplife
// side's p99 to bare's ("SIDE-p99/bare").
func (s samples) reportTail(b *testing.B, ss []*side, unit string) {
	bare := percentile(s["bare"], 0.99)
	for _, sd := range ss {
		got := s[sd.name]
		if len(got) == 0 {
			continue
		}
		p99 := percentile(got, 0.99)
		b.ReportMetric(float64(median(got))/scales[unit], sd.name+"-"+unit)
		b.ReportMetric(float64(p99)/scales[unit], sd.name+"-p99-"+unit)
		if sd.name != "bare" && bare > 0 {
			b.ReportMetric(float64(p99)/float64(bare), sd.name+"-p99/bare")
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianF(fs []float64) float64 {
	s := slices.Clone(fs)
	slices.Sort(s)
	return s[len(s)/2]
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func configs(b *testing.B, n int, behaviours ...string) []events.ServerConfig {
	var out []events.ServerConfig
	for i := range n {
		cmd, args := fixturetest.Command(b, behaviours...)
		out = append(out, events.ServerConfig{Name: fmt.Sprintf("srv%03d", i), Command: cmd, Args: args})
	}
	return out
}

// bareStart connects and lists every server in parallel with bare go-sdk
// clients, and returns the sessions (the caller closes them).
func bareStart(b *testing.B, ctx context.Context, cfgs []events.ServerConfig) []*mcp.ClientSession {
	return bareStartAt(b, ctx, cfgs, *protocolFlag)
}

// bareStartAt is bareStart with the bare clients offering version.
func bareStartAt(b *testing.B, ctx context.Context, cfgs []events.ServerConfig, version string) []*mcp.ClientSession {
	sessions := make([]*mcp.ClientSession, len(cfgs))
	var wg sync.WaitGroup
	for k, cfg := range cfgs {
		wg.Go(func() {
			// A host follows its servers' tool lists: under 2026-07-28 the
			// handler is what makes a client open subscriptions/listen, as
			// mcplife does, so both sides pay for the stream.
			c := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
			})
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(cfg.Command, cfg.Args...)},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				b.Error(err)
				return
			}
			for _, err := range cs.Tools(ctx, nil) {
				if err != nil {
					b.Error(err)
				}
			}
			sessions[k] = cs
		})
	}
	wg.Wait()
	return sessions
}

func closeAll(sessions []*mcp.ClientSession) {
	var wg sync.WaitGroup
	for _, cs := range sessions {
		if cs != nil {
			wg.Go(func() { cs.Close() })
		}
	}
	wg.Wait()
}

// newManager returns a manager of a new session on sd's journal.
func newManager(b *testing.B, sd *side, opts manager.Options) *manager.Manager {
	opts.Cwd = sd.cwd
	opts.ToolCache = sd.cache
	if opts.ProtocolVersion == "" {
		opts.ProtocolVersion = *protocolFlag
	}
	m, err := manager.New(sd.j, journal.NewSessionID(), &opts)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkStartup starts N = 1, 20, 50 stdio servers of two tools in
// parallel (connect, initialize, list) with each side; mcplife waits for
// every server (a long gate), as the bare client does. Goal: mcplife/bare
// ≤ 1.10 (≤ 1.15 at N=1).
func BenchmarkStartup(b *testing.B) {
	for _, n := range []int{1, 20, 50} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) { benchStartup(b, n, "only=echo,add") })
	}
}

// BenchmarkStartupScale is BenchmarkStartup with 200 servers of 50 tools
// each (10,000 tools); it also reports what the idle connected servers
// cost (heap, RSS, events, store). Goal: mcplife/bare ≤ 1.15. It is a
// benchmark of its own so that '^Benchmark(Startup|Call)$' selects the
// lifecycle's figures without it.
func BenchmarkStartupScale(b *testing.B) {
	b.Run("N=200", func(b *testing.B) { benchStartup(b, 200, "tools=50") })
}

// BenchmarkStartupLegacyRecorded starts N = 1 and 20 servers that know
// only initialize (2025-11-25): the bare client pinned to that version
// against mcplife at its default, which the first round (not counted)
// records the servers' era with, so that every counted connect sends
// initialize at once, with no probe. Goal: mcplife/bare ≤ 1.05.
func BenchmarkStartupLegacyRecorded(b *testing.B) {
	for _, n := range []int{1, 20} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			benchStartupAt(b, n, legacyProtocol, "only=echo,add", "protocol="+legacyProtocol)
		})
	}
}

func benchStartup(b *testing.B, n int, behaviour string) {
	benchStartupAt(b, n, *protocolFlag, behaviour)
}

// benchStartupAt is benchStartup with the bare clients offering
// bareVersion.
func benchStartupAt(b *testing.B, n int, bareVersion string, behaviours ...string) {
	ctx := context.Background()
	ss := sides(b)
	cfgs := configs(b, n, behaviours...)
	s := samples{}
	run := func(sd *side) (time.Duration, func()) {
		start := time.Now()
		if sd.j == nil {
			sessions := bareStartAt(b, ctx, cfgs, bareVersion)
			return time.Since(start), func() { closeAll(sessions) }
		}
		m := newManager(b, sd, manager.Options{Gate: time.Minute})
		res, err := m.ConnectServers(ctx, cfgs, nil)
		elapsed := time.Since(start)
		if err != nil || len(res.Errors) > 0 {
			b.Fatalf("%s: connect: %v %v", sd.name, res.Errors, err)
		}
		return elapsed, func() { m.Close(ctx) }
	}
	// One round to warm the page cache and the tool caches, not counted;
	// at N=200 it also measures what idle connected servers cost (reported
	// after the loop, which resets metrics).
	scale := map[string]float64{}
	report := func(v float64, unit string) { scale[unit] = v }
	for _, sd := range ss {
		var before runtime.MemStats
		var rss0, seq0, size0 int64
		if n == 200 {
			runtime.GC()
			runtime.ReadMemStats(&before)
			rss0, seq0, size0 = rss(), lastSeq(sd), fileSize(sd.path)
		}
		_, stop := run(sd)
		if n == 200 {
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			report(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n)/1024, sd.name+"-heap-KiB/server")
			report(float64(rss()-rss0)/float64(n)/1024, sd.name+"-rss-KiB/server")
			if sd.j != nil {
				if err := sd.j.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				report(float64(lastSeq(sd)-seq0), sd.name+"-events")
			}
			if sd.path != "" {
				report(float64(fileSize(sd.path)-size0)/1024, sd.name+"-store-KiB")
			}
		}
		stop()
	}
	round := 0
	for b.Loop() {
		for _, sd := range order(ss, round) {
			d, stop := run(sd)
			b.StopTimer()
			stop()
			b.StartTimer()
			s[sd.name] = append(s[sd.name], d)
		}
		round++
	}
	s.report(b, ss, "ms")
	for unit, v := range scale {
		b.ReportMetric(v, unit)
	}
}

// callsPerRound is how many echo calls each side makes in one round of
// BenchmarkCall, so that 11 rounds give a p99 of 1,100 calls.
const callsPerRound = 100

// BenchmarkCall makes callsPerRound echo calls per side per round, the
// sides taking turns call by call, each side on its own server process.
// It reports each side's p50 and p99 over every call, the median of the
// per-round paired ratios of the p50s (side/bare) and the ratio of the
// p99s (side-p99/bare). Each call is a trace region "call SIDE", so a
// -trace shows where the slow ones went. Goal: p50 ≤ 1.10×, p99 ≤ 1.5×.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	ss := sides(b)
	cfg := configs(b, 1, "only=echo")
	calls := map[string]func() error{}
	args := map[string]any{"text": "hello"}
	for _, sd := range ss {
		if sd.j == nil {
			sessions := bareStart(b, ctx, cfg)
			b.Cleanup(func() { closeAll(sessions) })
			params := &mcp.CallToolParams{Name: "echo", Arguments: args}
			calls[sd.name] = func() error { _, err := sessions[0].CallTool(ctx, params); return err }
			continue
		}
		m := newManager(b, sd, manager.Options{Gate: time.Minute})
		b.Cleanup(func() { m.Close(ctx) })
		if _, err := m.ConnectServers(ctx, cfg, nil); err != nil {
			b.Fatal(err)
		}
		echo, ok := m.Tool("mcp_srv000_echo")
		if !ok {
			b.Fatal("no echo tool")
		}
		calls[sd.name] = func() error {
			r, err := echo.Call(ctx, args)
			if err == nil && r.Result.IsError {
				err = fmt.Errorf("%s", r.Text())
			}
			return err
		}
	}
	for range 200 { // warm up
		for _, sd := range ss {
			if err := calls[sd.name](); err != nil {
				b.Fatal(err)
			}
		}
	}
	regions := map[string]string{}
	for _, sd := range ss {
		regions[sd.name] = "call " + sd.name
	}
	all := samples{}    // every call
	rounds := samples{} // each round's median
	round := 0
	for b.Loop() {
		got := samples{}
		for i := range callsPerRound {
			for _, sd := range order(ss, round*callsPerRound+i) {
				r := trace.StartRegion(ctx, regions[sd.name])
				start := time.Now()
				err := calls[sd.name]()
				d := time.Since(start)
				r.End()
				if err != nil {
					b.Fatal(err)
				}
				got[sd.name] = append(got[sd.name], d)
			}
		}
		for name, ds := range got {
			all[name] = append(all[name], ds...)
			rounds[name] = append(rounds[name], median(ds))
		}
		round++
	}
	rounds.reportRatios(b, ss, "")
	all.reportTail(b, ss, "µs")
}

// BenchmarkWarmGate starts 20 servers whose tools/list takes 2 s, each
// with a cached list from an earlier session, and measures how long until
// the session has every tool: the bare client waits for the lists; mcplife
// serves the cached ones at the gate (250 ms), or at once with EagerCache.
// Goal: all tools within 15 ms with EagerCache.
func BenchmarkWarmGate(b *testing.B) {
	ctx := context.Background()
	ss := sides(b)
	cfgs := configs(b, 20, "only=echo,add", "slow-list=2s")
	for _, sd := range ss[1:] {
		for _, cfg := range cfgs {
			if _, err := sd.j.Append(ctx, "earlier", &events.ToolsListed{Server: cfg.Name, ConfigHash: cfg.Hash(),
				Tools: []events.ToolDef{{Name: "echo"}, {Name: "add"}}, Count: 2, Cause: events.CauseInitial}); err != nil {
				b.Fatal(err)
			}
		}
	}
	type way struct {
		name  string
		side  *side
		eager bool
	}
	var ways []way
	for _, sd := range ss {
		ways = append(ways, way{sd.name, sd, false})
		if sd.j != nil {
			ways = append(ways, way{sd.name + "-eager", sd, true})
		}
	}
	s := samples{}
	round := 0
	for b.Loop() {
		k := round % len(ways)
		for _, w := range append(slices.Clone(ways[k:]), ways[:k]...) {
			start := time.Now()
			var stop func()
			if w.side.j == nil {
				sessions := bareStart(b, ctx, cfgs)
				stop = func() { closeAll(sessions) }
			} else {
				m := newManager(b, w.side, manager.Options{EagerCache: w.eager})
				res, err := m.ConnectServers(ctx, cfgs, nil)
				if err != nil || len(res.Tools) != 40 {
					b.Fatalf("%s: %d tools, %v", w.name, len(res.Tools), err)
				}
				stop = func() { m.Close(ctx) }
			}
			s[w.name] = append(s[w.name], time.Since(start))
			b.StopTimer()
			stop()
			b.StartTimer()
		}
		round++
	}
	for _, w := range ways {
		b.ReportMetric(float64(median(s[w.name]).Microseconds())/1e3, w.name+"-ms")
	}
}

// BenchmarkBatch appends 1,000-event batches through each mcplife side's
// journal (persist, project, deliver to a live subscriber) and reports
// events per second; the baseline is the same batch appended directly to
// a second store of the same kind (a store of its own, so the journal
// never reads the baseline's rows as another writer's). Goal: ≥ 200k
// events/s through the journal.
func BenchmarkBatch(b *testing.B) {
	ctx := context.Background()
	ss := sides(b)[1:]
	direct := map[string]store.Store{}
	for _, sd := range sides(b)[1:] {
		direct[sd.name] = sd.st
	}
	batch := make([]events.Event, 1000)
	for i := range batch {
		batch[i] = &events.ToolCallFinished{Server: "git", Tool: "status", Duration: time.Millisecond}
	}
	envs := make([]events.Envelope, len(batch))
	for i, ev := range batch {
		env, err := events.New("direct", ev, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		envs[i] = env
	}
	for _, sd := range ss {
		sub, err := sd.j.Subscribe(ctx, journal.SubscribeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for range sub.C() {
			}
		}()
		b.Cleanup(sub.Close)
	}
	journalTime := map[string]time.Duration{}
	storeTime := map[string]time.Duration{}
	round := 0
	for b.Loop() {
		for _, sd := range order(ss, round) {
			start := time.Now()
			if _, err := sd.j.Append(ctx, "batch", batch...); err != nil {
				b.Fatal(err)
			}
			mid := time.Now()
			if _, err := direct[sd.name].Append(ctx, "direct", store.AnyVersion, envs); err != nil {
				b.Fatal(err)
			}
			storeTime[sd.name] += time.Since(mid)
			journalTime[sd.name] += mid.Sub(start)
		}
		round++
	}
	for _, sd := range ss {
		n := float64(b.N * len(batch))
		b.ReportMetric(n/journalTime[sd.name].Seconds(), sd.name+"-events/s")
		b.ReportMetric(n/storeTime[sd.name].Seconds(), sd.name+"-store-events/s")
	}
}

// rss returns the process's resident set size in bytes (0 where /proc
// cannot tell).
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// lastSeq returns the last sequence of sd's store (0 for bare).
func lastSeq(sd *side) int64 {
	if sd.st == nil {
		return 0
	}
	n, _ := sd.st.LastSeq(context.Background())
	return int64(n)
}

// fileSize returns the size of a SQLite database with its write-ahead log.
func fileSize(path string) int64 {
	if path == "" {
		return 0
	}
	var total int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			total += fi.Size()
		}
	}
	return total
}
