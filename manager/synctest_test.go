package manager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

// memServers serves in-memory go-sdk servers to a manager: each config's
// Command names a behaviour. It lets the gate be tested on a fake clock.
type memServers struct {
	release chan struct{} // closed to let held tools/list answers go
}

func (ms *memServers) dial(name string, cfg events.ServerConfig, _ transport.Resolved, _ string) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	hold := func(method string) bool {
		switch cfg.Command {
		case "hold-list":
			return method == "tools/list"
		case "hang-init":
			return method == "initialize"
		}
		return false
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if cfg.Command == "start-10ms" && method == "initialize" {
				time.Sleep(10 * time.Millisecond) // the fake clock's: a server's start
			}
			if hold(method) {
				select {
				case <-ms.release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// heldWithCache returns n configs held00… whose tools/list is held, each
// with a one-tool list recorded by an earlier session in j (so cached).
func heldWithCache(t *testing.T, j *journal.Journal, n int) []events.ServerConfig {
	t.Helper()
	var configs []events.ServerConfig
	for i := range n {
		cfg := events.ServerConfig{Name: fmt.Sprintf("held%02d", i), Command: "hold-list"}
		configs = append(configs, cfg)
		if _, err := j.Append(context.Background(), "earlier", &events.ToolsListed{Server: cfg.Name, ConfigHash: cfg.Hash(),
			Tools: []events.ToolDef{{Name: "echo"}}, Count: 1, Cause: events.CauseInitial}); err != nil {
			t.Fatal(err)
		}
	}
	return configs
}

// memJournal returns a journal on st; the caller closes it.
func memJournal(t *testing.T, st store.Store) *journal.Journal {
	t.Helper()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// memManager returns a manager of session "s" on j; the caller closes it.
func memManager(t *testing.T, j *journal.Journal) *Manager {
	t.Helper()
	m, err := New(j, "s", &Options{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGateOnFakeClock checks on a fake clock that the gate returns after
// exactly 250 ms with the cached tools of every held server, and that a
// server without a cache is awaited.
func TestGateOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		j := memJournal(t, memory.New())
		defer j.Close()
		ms := &memServers{release: make(chan struct{})}
		m := memManager(t, j)
		m.dial = ms.dial
		configs := heldWithCache(t, j, 20)
		configs = append(configs, events.ServerConfig{Name: "fast", Command: "fast"})
		start := time.Now()
		res, err := m.ConnectServers(ctx, configs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != DefaultGate {
			t.Errorf("gate returned after %v, want %v", elapsed, DefaultGate)
		}
		if res.Gate.Elapsed != DefaultGate || res.Gate.Outcomes["fast"] != events.OutcomeReady || res.Gate.Outcomes["held07"] != events.OutcomeDeferred {
			t.Errorf("gate %+v", res.Gate)
		}
		if len(res.Tools) != 21 {
			t.Fatalf("%d tools", len(res.Tools))
		}
		for _, tl := range res.Tools {
			if tl.Deferred != (tl.Server != "fast") {
				t.Errorf("%s deferred=%v", tl.Name, tl.Deferred)
			}
		}

		// A server without a cache is awaited: the gate waits for it.
		go func() {
			time.Sleep(time.Second) // fake time: the held list answers after 1 s
			close(ms.release)
		}()
		start = time.Now()
		res, err = m.ConnectServers(ctx, []events.ServerConfig{{Name: "uncached", Command: "hold-list"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != time.Second || res.Gate.Outcomes["uncached"] != events.OutcomeAwaited {
			t.Errorf("awaited gate after %v: %+v", elapsed, res.Gate)
		}
		synctest.Wait()
		// The late lists are queued; Flush stores them (a live view has them
		// within the journal's DeferredDelay).
		if err := j.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for _, tl := range m.Tools() {
			if tl.Deferred {
				t.Errorf("%s still deferred after the lists arrived", tl.Name)
			}
		}
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
		var envs []events.Envelope
		for env, err := range j.Store().ReadStream(ctx, "s", 1) {
			if err != nil {
				t.Fatal(err)
			}
			envs = append(envs, env)
		}
		for _, v := range verify.Session("s", envs) {
			t.Errorf("invariant: %s", v)
		}
	})
}

// commitCounter is a memory store that counts its commits.
type commitCounter struct {
	*memory.Store
	mu sync.Mutex
	n  int
}

func (c *commitCounter) count() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *commitCounter) commits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *commitCounter) Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	c.count()
	return c.Store.Append(ctx, stream, expected, envs)
}

func (c *commitCounter) AppendBatch(ctx context.Context, reqs []store.AppendRequest) []store.AppendResult {
	c.count()
	return c.Store.AppendBatch(ctx, reqs)
}

// TestConnectRoundSharesGateCommit checks on a fake clock that a round
// whose servers settle within the linger (here after 10 ms, past the
// journal's deferred delay) is stored in one commit, the gate's, with its
// events in order; and that the round's first events of servers that
// take longer are stored when their linger ends, before the gate.
func TestConnectRoundSharesGateCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := &commitCounter{Store: memory.New()}
		j := memJournal(t, st)
		defer j.Close()
		ms := &memServers{release: make(chan struct{})}
		m := memManager(t, j)
		m.dial = ms.dial
		before := st.commits()
		res, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "a", Command: "start-10ms"}, {Name: "b", Command: "fast"}}, nil)
		if err != nil || len(res.Errors) > 0 {
			t.Fatal(err, res.Errors)
		}
		if n := st.commits() - before; n != 1 {
			t.Errorf("%d commits for a round whose servers settled within the linger, want 1", n)
		}
		var types []string
		for env, err := range st.ReadStream(ctx, "s", 1) {
			if err != nil {
				t.Fatal(err)
			}
			types = append(types, env.Type)
		}
		want := []string{"ServerDiscovered", "ServerDiscovered", "ConnectStarted", "ConnectStarted"}
		if len(types) < len(want)+1 || !slices.Equal(types[:len(want)], want) || types[len(types)-1] != "StartupGateElapsed" {
			t.Errorf("stored %v, want %v first and StartupGateElapsed last", types, want)
		}

		// A server whose list takes a second: its ConnectStarted is stored
		// when the linger ends, long before the gate.
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "slow", Command: "hold-list"}}, nil); err != nil {
				t.Error(err)
			}
		}()
		time.Sleep(roundLinger)
		synctest.Wait()
		var started bool
		for env, err := range st.ReadStream(ctx, "s", 1) {
			if err != nil {
				t.Fatal(err)
			}
			if env.Type == "ConnectStarted" && strings.Contains(string(env.Data), `"slow"`) {
				started = true
			}
		}
		if !started {
			t.Errorf("the slow server's ConnectStarted is not stored after %v", roundLinger)
		}
		close(ms.release)
		<-done
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDefaultTimeoutOnFakeClock checks the default 30 s connect timeout and
// its message without waiting for it.
func TestDefaultTimeoutOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		j := memJournal(t, memory.New())
		defer j.Close()
		ms := &memServers{release: make(chan struct{})}
		defer close(ms.release)
		m := memManager(t, j)
		m.dial = ms.dial
		start := time.Now()
		res, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "stuck", Command: "hang-init"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != defaultTimeout {
			t.Errorf("returned after %v", elapsed)
		}
		if got, want := fmt.Sprint(res.Errors["stuck"]), `Connection to MCP server "stuck" timed out after 30000ms`; got != want {
			t.Errorf("error %q, want %q", got, want)
		}
		m.Close(ctx)
	})
}

// TestReloadKeepsCachedToolsOfServerConnectedAtGate is the regression test
// of a reload under load that ended without one server's tools: at the
// gate the server had finished initialize (ServerConnected recorded) while
// its first tools/list was still pending, so the gate served its cached
// list, and the view ignored that CachedToolsServed because the server
// was connected rather than connecting. On a fake clock the gate always
// finds the server in that state.
func TestReloadKeepsCachedToolsOfServerConnectedAtGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		j := memJournal(t, st)
		defer j.Close()
		m := memManager(t, j)
		ms := &memServers{release: make(chan struct{})}
		m.dial = ms.dial
		defer m.Close(ctx)
		release := sync.OnceFunc(func() { close(ms.release) })
		defer release() // before Close, also when the test fails

		if _, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "c", Command: "fast"}}, nil); err != nil {
			t.Fatal(err)
		}
		// The reload finds a config of c whose first list is held, with a
		// list of it in the tool cache.
		held := events.ServerConfig{Name: "c", Command: "hold-list"}
		if _, err := j.Append(ctx, "earlier", &events.ToolsListed{Server: "c", ConfigHash: held.Hash(),
			Tools: []events.ToolDef{{Name: "echo"}}, Count: 1, Cause: events.CauseInitial}); err != nil {
			t.Fatal(err)
		}
		res, err := m.Reload(ctx, func(context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
			return []events.ServerConfig{held}, nil, nil
		})
		if err != nil || len(res.Errors) > 0 {
			t.Fatal(res.Errors, err)
		}
		if o := res.Gate.Outcomes["c"]; o != events.OutcomeDeferred {
			t.Fatalf("gate outcome %q, want deferred", o)
		}
		stream := func() (types []string) {
			for env, err := range st.ReadStream(ctx, "s", 1) {
				if err != nil {
					t.Fatal(err)
				}
				types = append(types, env.Type)
			}
			return types
		}
		// The case of the report: initialize finished before the gate.
		types := stream()
		started := lastIndex(types, events.TypeConnectStarted)
		if got := types[started:]; !slices.Equal(got, []string{events.TypeConnectStarted, events.TypeServerConnected,
			events.TypeCachedToolsServed, events.TypeStartupGateElapsed, events.TypeReloadCompleted}) {
			t.Fatalf("events of the reload's connect: %v", got)
		}
		for _, tools := range [][]*Tool{res.Tools, m.Tools()} {
			if len(tools) != 1 || tools[0].Name != "mcp_c_echo" || !tools[0].Deferred {
				t.Fatalf("tools after the reload: %+v", tools)
			}
		}
		if s := m.Status("c"); s != projector.StatusConnected {
			t.Fatalf("status %s", s)
		}

		// The late list replaces the cached tools.
		release()
		synctest.Wait()
		// The late lists are queued; Flush stores them (a live view has them
		// within the journal's DeferredDelay).
		if err := j.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if tools := m.Tools(); len(tools) != 1 || tools[0].Name != "mcp_c_echo" || tools[0].Deferred {
			t.Fatalf("tools after the late list: %+v", tools)
		}
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
		var envs []events.Envelope
		for env, err := range st.ReadStream(ctx, "s", 1) {
			if err != nil {
				t.Fatal(err)
			}
			envs = append(envs, env)
		}
		for _, v := range verify.Session("s", envs) {
			t.Errorf("invariant: %s", v)
		}
	})
}
