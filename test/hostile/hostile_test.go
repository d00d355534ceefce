package hostile

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/lifecycletest"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
)

func TestCrashDuringInitialize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	res := e.connect(ctx, stdio(t, "crashy", "exit-on-init", "exit-code=3", "stderr=crashy: cannot start"))
	err := res.Errors["crashy"]
	if err == nil {
		t.Fatalf("no error for crashy: %+v", res)
	}
	wantContains(t, "error", err.Error(), `MCP server "crashy"`)
	wantContains(t, "error", err.Error(), "process exited with status 3")
	wantContains(t, "error", err.Error(), "crashy: cannot start")
	if res.Gate.Outcomes["crashy"] != events.OutcomeFailed || res.Gate.Outcomes["healthy"] != events.OutcomeReady {
		t.Fatalf("outcomes %v", res.Gate.Outcomes)
	}
	wantTypes(t, "crashy", e.Types("crashy"), events.TypeServerDiscovered, events.TypeConnectStarted, events.TypeConnectFailed)
	if cf := lifecycletest.LastOf[*events.ConnectFailed](e.Env, "crashy"); cf.TimedOut || cf.Error != err.Error() {
		t.Fatalf("ConnectFailed %+v, result error %q", cf, err)
	}
	if st := e.Manager.Status("crashy"); st != projector.StatusDisconnected {
		t.Fatalf("status %s", st)
	}
	e.checkHealthy(ctx)
}

func TestNeverAnswersInitialize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	res := e.connect(ctx, withTimeout(stdio(t, "mute", "hang-init"), 300))
	err := res.Errors["mute"]
	if err == nil || err.Error() != `Connection to MCP server "mute" timed out after 300ms` {
		t.Fatalf("error %v", err)
	}
	if !errors.Is(err, manager.ErrTimeout) {
		t.Fatalf("%v does not wrap ErrTimeout", err)
	}
	wantTypes(t, "mute", e.Types("mute"), events.TypeServerDiscovered, events.TypeConnectStarted, events.TypeConnectFailed)
	if cf := lifecycletest.LastOf[*events.ConnectFailed](e.Env, "mute"); !cf.TimedOut {
		t.Fatalf("ConnectFailed %+v: not marked timed out", cf)
	}
	e.checkHealthy(ctx)
}

func TestExitsRightAfterInitialize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	e.connect(ctx, stdio(t, "brief", "exit-after-init", "exit-code=4"))
	// The handshake succeeded, so the exit is a drop, and a reconnect
	// follows; every new process exits the same way, so the crash-loop
	// breaker gives up after five failed attempts (the drops count: none
	// lived 10 s) within about 7.5 s of backoff.
	e.WaitFor(ctx, "brief given up", func() bool {
		return slices.Contains(e.Types("brief"), events.TypeReconnectGaveUp)
	})
	types := e.Types("brief")
	if !slices.Equal(types[:4], []string{events.TypeServerDiscovered, events.TypeConnectStarted, events.TypeServerEraDetected, events.TypeServerConnected}) || types[len(types)-1] != events.TypeReconnectGaveUp {
		t.Fatalf("brief events %v", types)
	}
	var first *events.Disconnected
	for _, env := range e.History() {
		if env.Type == events.TypeDisconnected {
			ev, _ := events.Decode(env)
			if d := ev.(*events.Disconnected); d.Server == "brief" && first == nil {
				first = d
			}
		}
	}
	if first == nil || first.ExitStatus == nil || *first.ExitStatus != 4 || first.Reason != events.ReasonProcessExited || !first.Reconnecting {
		t.Fatalf("first Disconnected %+v: want exit status 4, reason %q, reconnecting", first, events.ReasonProcessExited)
	}
	if g := lifecycletest.LastOf[*events.ReconnectGaveUp](e.Env, "brief"); g.Attempts != 5 {
		t.Fatalf("ReconnectGaveUp %+v: want 5 attempts", g)
	}
	if e.Manager.Status("brief") != projector.StatusFailed {
		t.Fatalf("status %s", e.Manager.Status("brief"))
	}
	for _, tl := range e.Manager.Tools() {
		if tl.Server == "brief" {
			t.Fatalf("tool %s of the given-up server is still exposed", tl.Name)
		}
	}
	e.checkHealthy(ctx)
}

func TestCrashDuringToolCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	e.connect(ctx, stdio(t, "fragile", "only=echo,crash"))
	crash := e.tool("mcp_fragile_crash")
	start := time.Now()
	res, err := crash.Call(ctx, map[string]any{"code": 5, "message": "fragile: segfault"})
	if err != nil {
		t.Fatalf("a crash is a result, not an error: %v", err)
	}
	if !res.Result.IsError {
		t.Fatalf("result %+v", res)
	}
	wantPrefix(t, "result", res.Text(), manager.ErrorPrefix)
	// The crash is a drop; a new process is connected after the first
	// backoff delay, and the session's tool, still held, answers again.
	e.WaitFor(ctx, "fragile back", func() bool {
		return slices.Contains(e.Types("fragile"), events.TypeDisconnected) && e.Manager.Status("fragile") == projector.StatusConnected
	})
	res, err = e.tool("mcp_fragile_echo").Call(ctx, map[string]any{"text": "back"})
	if err != nil || res.Result.IsError || res.Text() != "back" {
		t.Fatalf("call after the reconnect: %+v %v", res, err)
	}
	t.Logf("crashed server answered again after %v", time.Since(start).Round(time.Millisecond))
	d := lifecycletest.LastOf[*events.Disconnected](e.Env, "fragile")
	if d.ExitStatus == nil || *d.ExitStatus != 5 || !d.Reconnecting {
		t.Fatalf("Disconnected %+v: want exit status 5, reconnecting", d)
	}
	wantContains(t, "Disconnected error", d.Error, "fragile: segfault")
	if rs := lifecycletest.LastOf[*events.ReconnectScheduled](e.Env, "fragile"); rs.Attempt != 2 || rs.Cause != string(events.ReasonProcessExited) {
		t.Fatalf("ReconnectScheduled %+v", rs)
	}
	var finished []*events.ToolCallFinished
	for _, env := range e.History() {
		if ev, _ := events.Decode(env); env.Type == events.TypeToolCallFinished {
			finished = append(finished, ev.(*events.ToolCallFinished))
		}
	}
	if len(finished) == 0 || !finished[0].IsError || !strings.HasPrefix(finished[0].Error, manager.ErrorPrefix) || finished[0].Retried {
		t.Fatalf("ToolCallFinished of the crash %+v: an error, not retried (crash is not read-only)", finished)
	}
	e.checkHealthy(ctx)
}

func TestHangsInToolsList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	// The timeout bounds connect + initialize and, separately, the list:
	// long enough for a process to start and initialize on a loaded
	// machine, so only the hanging list can time out.
	res := e.connect(ctx, withTimeout(stdio(t, "stuck", "only=echo", "hang-list"), 3000))
	err := res.Errors["stuck"]
	if err == nil || err.Error() != `Listing tools of MCP server "stuck" timed out after 3000ms` {
		t.Fatalf("error %v", err)
	}
	wantTypes(t, "stuck", e.Types("stuck"), events.TypeServerDiscovered, events.TypeConnectStarted, events.TypeServerEraDetected, events.TypeServerConnected, events.TypeToolsListFailed)
	for _, tl := range e.Manager.Tools() {
		if tl.Server == "stuck" {
			t.Fatalf("stuck exposes %s", tl.Name)
		}
	}
	e.checkHealthy(ctx)
}

func TestGarbageOnStdout(t *testing.T) {
	for _, when := range []string{"garbage-before-init", "garbage-after-init"} {
		t.Run(when, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := lifecycletest.Context(t)
			res := e.connect(ctx, stdio(t, "noisy", "only=echo", when))
			// A line that cannot be JSON-RPC is skipped, as peer hosts do:
			// the noisy server connects and works, and the healthy one is
			// untouched.
			if err := res.Errors["noisy"]; err != nil {
				t.Fatalf("noisy failed: %v; events %v", err, e.Types("noisy"))
			}
			wantTypes(t, "noisy", e.Types("noisy"), events.TypeServerDiscovered, events.TypeConnectStarted, events.TypeServerEraDetected, events.TypeServerConnected, events.TypeToolsListed)
			r, err := e.tool("mcp_noisy_echo").Call(ctx, map[string]any{"text": "heard"})
			if err != nil || r.Result.IsError || r.Text() != "heard" {
				t.Fatalf("noisy echo: %+v %v", r, err)
			}
			e.checkHealthy(ctx)
		})
	}
}

func TestStderrFloodStaysBounded(t *testing.T) {
	t.Parallel()
	const limit = 64<<10 + 1<<10
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	res := e.connect(ctx,
		stdio(t, "floodinit", "stderr-flood=10MiB", "exit-on-init"),
		stdio(t, "floodlater", "only=write_stderr,crash"),
	)
	err := res.Errors["floodinit"]
	if err == nil {
		t.Fatal("floodinit did not fail")
	}
	if n := len(err.Error()); n > limit {
		t.Fatalf("connect error is %d bytes, want at most %d", n, limit)
	}
	wantContains(t, "error", err.Error(), "mcplife fixture: exit 1 (exit-on-init)")
	if cf := lifecycletest.LastOf[*events.ConnectFailed](e.Env, "floodinit"); len(cf.Error) > limit {
		t.Fatalf("recorded error is %d bytes", len(cf.Error))
	}

	// A flood during the session, then a crash: the drop's error quotes a
	// bounded tail.
	w, cerr := e.tool("mcp_floodlater_write_stderr").Call(ctx, map[string]any{"bytes": 10 << 20})
	if cerr != nil || w.Result.IsError {
		t.Fatalf("write_stderr: %+v %v", w, cerr)
	}
	if _, cerr := e.tool("mcp_floodlater_crash").Call(ctx, map[string]any{"message": "the last words"}); cerr != nil {
		t.Fatal(cerr)
	}
	e.WaitFor(ctx, "floodlater dropped", func() bool { return slices.Contains(e.Types("floodlater"), events.TypeDisconnected) })
	d := lifecycletest.LastOf[*events.Disconnected](e.Env, "floodlater")
	if len(d.Error) > limit {
		t.Fatalf("Disconnected error is %d bytes", len(d.Error))
	}
	wantContains(t, "Disconnected error", d.Error, "the last words")
	for _, env := range e.History() {
		if len(env.Data) > limit {
			t.Errorf("%s event of %d bytes", env.Type, len(env.Data))
		}
	}
	e.checkHealthy(ctx)
}

func TestFiveThousandToolsAcrossPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	res := e.connect(ctx, stdio(t, "huge", "only=", "tools=5000", "page-size=100"))
	if err := res.Errors["huge"]; err != nil {
		t.Fatal(err)
	}
	listed := lifecycletest.LastOf[*events.ToolsListed](e.Env, "huge")
	if listed.Count != 5000 || len(listed.Tools) != 5000 {
		t.Fatalf("ToolsListed count %d, %d tools", listed.Count, len(listed.Tools))
	}
	var names []string
	for _, tl := range e.Manager.Tools() {
		if tl.Server == "huge" {
			names = append(names, tl.Name)
		}
	}
	if len(names) != 5000 || names[0] != "mcp_huge_tool_0001" || names[4999] != "mcp_huge_tool_5000" {
		t.Fatalf("%d tools, first %v", len(names), names[:min(3, len(names))])
	}
	if !slices.IsSorted(names) {
		t.Fatal("tools are not sorted by name")
	}
	r, err := e.tool("mcp_huge_tool_4321").Call(ctx, map[string]any{"text": "deep page"})
	if err != nil || r.Result.IsError || r.Text() != "deep page" {
		t.Fatalf("call: %+v %v", r, err)
	}
	e.checkHealthy(ctx)
}

var exposedName = regexp.MustCompile(`^mcp_[a-z0-9_]+$`)

func TestWeirdToolNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	res := e.connect(ctx, stdio(t, "weird", "only=", "weird-names"))
	if err := res.Errors["weird"]; err != nil {
		t.Fatal(err)
	}
	byOriginal := map[string]*manager.Tool{}
	seen := map[string]bool{}
	for _, tl := range e.Manager.Tools() {
		if tl.Server != "weird" {
			continue
		}
		if len(tl.Name) > projector.MaxToolNameLen || !exposedName.MatchString(tl.Name) || !utf8.ValidString(tl.Name) {
			t.Errorf("exposed name %q (%d bytes)", tl.Name, len(tl.Name))
		}
		if seen[tl.Name] {
			t.Errorf("name %s exposed twice", tl.Name)
		}
		seen[tl.Name] = true
		byOriginal[tl.Original] = tl
	}
	for _, orig := range fixture.WeirdToolNames {
		tl, ok := byOriginal[orig]
		if !ok {
			t.Errorf("tool %q not exposed; have %v", orig, byOriginal)
			continue
		}
		if srv, o, ok := e.Manager.Resolve(tl.Name); !ok || srv != "weird" || o != orig {
			t.Errorf("Resolve(%s) = %s, %q, %v", tl.Name, srv, o, ok)
		}
		r, err := tl.Call(ctx, map[string]any{"text": "hi " + orig})
		if err != nil || r.Result.IsError || r.Text() != "hi "+orig {
			t.Errorf("call %s (%q): %+v %v", tl.Name, orig, r, err)
		}
	}
	if got := byOriginal["name with spaces"].Name; got != "mcp_weird_name_with_spaces" {
		t.Errorf("name with spaces → %s", got)
	}
	// Foo-Bar and foo_bar both sanitise to foo_bar: one keeps the name,
	// the other is renamed, and the collision is recorded.
	a, b := byOriginal["Foo-Bar"].Name, byOriginal["foo_bar"].Name
	if a == b || (a != "mcp_weird_foo_bar" && b != "mcp_weird_foo_bar") {
		t.Errorf("colliding names: Foo-Bar → %s, foo_bar → %s", a, b)
	}
	if cs := e.Manager.View().Collisions(); len(cs) == 0 {
		t.Error("no collision recorded")
	}
	// The same pair gets the same name in another session.
	e2 := newEnv(t)
	e2.connect(ctx, stdio(t, "weird", "only=", "weird-names"))
	for _, tl := range e2.Manager.Tools() {
		if tl.Server == "weird" && byOriginal[tl.Original].Name != tl.Name {
			t.Errorf("%q named %s, then %s", tl.Original, byOriginal[tl.Original].Name, tl.Name)
		}
	}
	e.checkHealthy(ctx)
}

func TestMegabyteInputSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	res := e.connect(ctx, stdio(t, "schema", "only=echo", "big-schema=1MiB"))
	if err := res.Errors["schema"]; err != nil {
		t.Fatal(err)
	}
	tl := e.tool("mcp_schema_big_schema")
	if n := len(tl.InputSchema); n < 1<<20 {
		t.Fatalf("input schema is %d bytes, want at least 1 MiB", n)
	}
	var schema map[string]any
	if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema["type"] != "object" {
		t.Fatalf("schema does not decode: %v", err)
	}
	listed := lifecycletest.LastOf[*events.ToolsListed](e.Env, "schema")
	if listed.Count != 2 {
		t.Fatalf("ToolsListed %d tools", listed.Count)
	}
	r, err := tl.Call(ctx, map[string]any{})
	if err != nil || r.Result.IsError || r.Text() != "ok" {
		t.Fatalf("call: %+v %v", r, err)
	}
	e.checkHealthy(ctx)
}

func TestTenMegabyteResult(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := lifecycletest.Context(t)
	cfg := stdio(t, "bulky", "only=big_result")
	cfg.MaxOutputBytes = new(int64(0)) // no output budget: the whole result comes through
	e.connect(ctx, cfg)
	r, err := e.tool("mcp_bulky_big_result").Call(ctx, nil)
	if err != nil || r.Result.IsError {
		t.Fatalf("call: %+v %v", r, err)
	}
	text := r.Text()
	if len(text) != fixture.DefaultBigResult || !strings.HasPrefix(text, "0123456789abcdef") {
		t.Fatalf("result is %d bytes, want %d", len(text), fixture.DefaultBigResult)
	}
	// Results are never recorded.
	for _, env := range e.History() {
		if len(env.Data) > 64<<10 {
			t.Errorf("%s event of %d bytes", env.Type, len(env.Data))
		}
	}
	fin := lifecycletest.LastOf[*events.ToolCallFinished](e.Env, "bulky")
	if fin.IsError {
		t.Fatalf("ToolCallFinished %+v", fin)
	}
	e.checkHealthy(ctx)
}

// TestHTTPServerVanishes: a remote server goes away at runtime (its
// connections are cut and every later request is dropped). The drop is
// detected without waiting for a call and recorded as Disconnected with
// reason "transport closed" and the error, its tools go away and calls fail
// with "MCP error:".
func TestHTTPServerVanishes(t *testing.T) {
	for _, transport := range []string{events.TransportHTTP, events.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := lifecycletest.Context(t)
			g := fixturetest.NewGate(t)
			opts := &fixturetest.HTTPOptions{SSE: transport == events.TransportSSE}
			url := fixturetest.Serve(t, opts, "only=echo", g.Arg("exit-on-release"))
			res := e.connect(ctx, events.ServerConfig{Name: "remote", Type: transport, URL: url})
			if err := res.Errors["remote"]; err != nil {
				t.Fatal(err)
			}
			echo := e.tool("mcp_remote_echo")
			start := time.Now()
			g.Release()
			e.WaitFor(ctx, "remote dropped", func() bool { return slices.Contains(e.Types("remote"), events.TypeDisconnected) })
			t.Logf("%s drop detected after %v", transport, time.Since(start).Round(time.Millisecond))
			d := lifecycletest.LastOf[*events.Disconnected](e.Env, "remote")
			// The server is gone for good: the reconnects fail until the
			// breaker gives up.
			e.WaitFor(ctx, "remote given up", func() bool { return e.Manager.Status("remote") == projector.StatusFailed })
			if d.Reason != events.ReasonTransportClosed || d.Error == "" {
				t.Fatalf("Disconnected %+v", d)
			}
			// The standalone stream is retried once, not the go-sdk's
			// default five times (about 20 s of backoff), before the
			// session fails.
			if transport == events.TransportHTTP && !strings.Contains(d.Error, "after 1 attempts") {
				t.Errorf("Disconnected error %q: want the stream given up after 1 attempt", d.Error)
			}
			r, err := echo.Call(ctx, map[string]any{"text": "gone?"})
			if err != nil || !r.Result.IsError {
				t.Fatalf("call after the drop: %+v %v", r, err)
			}
			wantPrefix(t, "call after the drop", r.Text(), manager.ErrorPrefix)
			for _, tl := range e.Manager.Tools() {
				if tl.Server == "remote" {
					t.Fatalf("tool %s of the vanished server is still exposed", tl.Name)
				}
			}
			e.checkHealthy(ctx)
		})
	}
}
