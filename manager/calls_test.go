package manager

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/projector"
)

func TestCallResults(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "fx", "only=echo,media,fail,add")}, nil); err != nil {
		t.Fatal(err)
	}
	// Text and structuredContent; raw JSON arguments.
	r, err := tool(t, e.m, "mcp_fx_add").Call(ctx, json.RawMessage(`{"a":2,"b":3}`))
	if err != nil || r.Result.IsError {
		t.Fatalf("add: %+v %v", r, err)
	}
	var sum struct{ Sum float64 }
	if err := json.Unmarshal(structuredJSON(r), &sum); err != nil || sum.Sum != 5 {
		t.Fatalf("structured %s: %v", structuredJSON(r), err)
	}
	// Every content type, with data and MIME types kept.
	r, err = tool(t, e.m, "mcp_fx_media").Call(ctx, nil)
	if err != nil || r.Result.IsError {
		t.Fatalf("media: %+v %v", r, err)
	}
	var (
		image *mcp.ImageContent
		audio *mcp.AudioContent
		link  *mcp.ResourceLink
		res   *mcp.EmbeddedResource
	)
	for _, c := range r.Result.Content { // the first of each kind
		switch c := c.(type) {
		case *mcp.ImageContent:
			image = cmp.Or(image, c)
		case *mcp.AudioContent:
			audio = cmp.Or(audio, c)
		case *mcp.ResourceLink:
			link = cmp.Or(link, c)
		case *mcp.EmbeddedResource:
			res = cmp.Or(res, c)
		}
	}
	if c := image; c == nil || c.MIMEType != "image/png" || len(c.Data) == 0 {
		t.Errorf("image %+v", c)
	}
	if c := audio; c == nil || c.MIMEType != "audio/wav" || len(c.Data) == 0 {
		t.Errorf("audio %+v", c)
	}
	if c := link; c == nil || c.URI != "file:///fixture/readme.txt" || c.Name != "readme.txt" || c.MIMEType != "text/plain" {
		t.Errorf("resource link %+v", c)
	}
	if c := res; c == nil || c.Resource == nil || c.Resource.Text != "embedded note" || c.Resource.URI != "file:///fixture/note.txt" {
		t.Errorf("embedded resource %+v", c)
	}
	// A client-side failure carries its typed error.
	if err != nil || r.Err != nil {
		t.Errorf("media: Err %v, want nil", r.Err)
	}
	// A tool's own error stays the server's result.
	r, err = tool(t, e.m, "mcp_fx_fail").Call(ctx, map[string]any{"message": "nope"})
	if err != nil || !r.Result.IsError || strings.HasPrefix(r.Text(), ErrorPrefix) || !strings.Contains(r.Text(), "nope") {
		t.Fatalf("fail: %+v %v", r, err)
	}
	// A protocol error becomes an MCP error result.
	bogus := *tool(t, e.m, "mcp_fx_echo")
	bogus.Original = "no_such_tool"
	r, err = bogus.Call(ctx, nil)
	if err != nil || !r.Result.IsError || !strings.HasPrefix(r.Text(), ErrorPrefix) || r.Err == nil ||
		r.Text() != ErrorPrefix+r.Err.Error() || errors.Is(r.Err, ErrNotConnected) {
		t.Fatalf("unknown tool: %+v %v", r, err)
	}
	// One correlated pair per call, no arguments or results recorded.
	started := map[string]bool{}
	finished := map[string]events.ToolCallFinished{}
	for _, env := range e.events("s1") {
		ev, _ := events.Decode(env)
		switch ev := ev.(type) {
		case *events.ToolCallStarted:
			if ev.Arguments != nil {
				t.Errorf("arguments recorded: %s", ev.Arguments)
			}
			started[env.CorrelationID] = true
		case *events.ToolCallFinished:
			finished[env.CorrelationID] = *ev
		}
	}
	if len(started) != 4 || len(finished) != 4 {
		t.Fatalf("started %v finished %v", started, finished)
	}
	for id := range started {
		if _, ok := finished[id]; !ok {
			t.Errorf("call %s not finished", id)
		}
	}
	var isErr int
	for _, f := range finished {
		if f.IsError {
			isErr++
			if strings.Contains(f.Error, "nope") {
				t.Errorf("tool error text recorded: %q", f.Error)
			}
		}
	}
	if isErr != 2 {
		t.Errorf("%d finished calls are errors, want 2", isErr)
	}
}

func TestCallCancelledReturnsContextError(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "fx", "only=sleep")}, nil); err != nil {
		t.Fatal(err)
	}
	cancelled := fixturetest.NewGate(t)
	inside := fixturetest.NewGate(t)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		r, err := tool(t, e.m, "mcp_fx_sleep").Call(cctx, map[string]any{"gate": inside.Path(), "on_cancel": cancelled.Path()})
		if r != nil {
			err = fmt.Errorf("got a result %+v with %v", r, err)
		}
		done <- err
	}()
	if err := inside.WaitReached(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	// The server saw the cancellation.
	if err := cancelled.WaitReached(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fin := ofType[*events.ToolCallFinished](e, "s1")
	if len(fin) != 1 || !fin[0].Cancelled {
		t.Fatalf("finished %+v", fin)
	}
}

func TestCaptureArgumentsRedacts(t *testing.T) {
	e := newEnv(t, &Options{CaptureArguments: true})
	ctx := testCtx(t)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "fx", "only=echo")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tool(t, e.m, "mcp_fx_echo").Call(ctx, map[string]any{"text": "hello", "api_key": "k-123456", "url": "https://h/?token=t-987654"}); err != nil {
		t.Fatal(err)
	}
	st := ofType[*events.ToolCallStarted](e, "s1")
	if len(st) != 1 {
		t.Fatal(st)
	}
	got := string(st[0].Arguments)
	if !strings.Contains(got, "hello") || strings.Contains(got, "k-123456") || strings.Contains(got, "t-987654") {
		t.Fatalf("arguments %s", got)
	}
}

func TestServerDropFailsCallsAndIsRecorded(t *testing.T) {
	e := newEnv(t, noReconnect)
	ctx := testCtx(t)
	exit := fixturetest.NewGate(t)
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{
		stdio(t, "crashy", "only=sleep,echo", "exit-code=7", exit.Arg("exit-on-release")),
		stdio(t, "steady", "only=echo"),
	}, nil); err != nil {
		t.Fatal(err)
	}
	sleep := tool(t, e.m, "mcp_crashy_sleep")
	inFlight := make(chan *CallResult, 1)
	reached := fixturetest.NewGate(t)
	go func() {
		r, err := sleep.Call(ctx, map[string]any{"gate": reached.Path()})
		if err != nil {
			t.Error(err)
		}
		inFlight <- r
	}()
	if err := reached.WaitReached(ctx, 1); err != nil {
		t.Fatal(err)
	}
	exit.Release()
	r := <-inFlight
	if !r.Result.IsError || !strings.HasPrefix(r.Text(), ErrorPrefix) {
		t.Fatalf("in-flight call: %+v", r)
	}
	waitFor(t, ctx, updates, func() bool { return e.m.Status("crashy") == projector.StatusDisconnected })
	r, err = tool(t, e.m, "mcp_steady_echo").Call(ctx, map[string]any{"text": "still here"})
	if err != nil || r.Text() != "still here" {
		t.Fatalf("other server: %+v %v", r, err)
	}
	r, err = sleep.Call(ctx, nil)
	if err != nil || r.Text() != "MCP error: MCP server not connected: crashy" {
		t.Fatalf("later call: %+v %v", r, err)
	}
	var se *ServerError
	if !errors.Is(r.Err, ErrNotConnected) || !errors.As(r.Err, &se) || se.Server != "crashy" {
		t.Errorf("later call's Err %#v, want a ServerError of crashy matching ErrNotConnected", r.Err)
	}
	var d *events.Disconnected
	for _, x := range ofType[*events.Disconnected](e, "s1") {
		d = x
	}
	if d == nil || d.Server != "crashy" || d.Reason != events.ReasonProcessExited || d.ExitStatus == nil || *d.ExitStatus != 7 {
		t.Fatalf("disconnected %+v", d)
	}
	contains(t, "drop error", d.Error, "status 7")
	equal(t, "tools", toolNames(e.m.Tools()), []string{"mcp_steady_echo"})
	// A reconnect brings it back.
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "crashy", "only=echo")}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	equal(t, "tools after reconnect", toolNames(e.m.Tools()), []string{"mcp_crashy_echo", "mcp_steady_echo"})
}

func TestToolListChanged(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	g := fixturetest.NewGate(t)
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "fx", "only=echo", g.Arg("change-tools-on-release"))}, nil); err != nil {
		t.Fatal(err)
	}
	g.Release()
	waitFor(t, ctx, updates, func() bool { return len(e.m.Tools()) == 2 })
	equal(t, "tools", toolNames(e.m.Tools()), []string{"mcp_fx_added_on_release", "mcp_fx_echo"})
	equal(t, "events", e.serverTypes("s1", "fx"), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListed/initial", "ToolListChanged", "ToolsListed/list-changed"})
	// The cache follows: a new session would serve the new list.
	cfgHash := ofType[*events.ServerDiscovered](e, "s1")[0].ConfigHash
	tools, _, ok := e.m.cache.Lookup("fx", cfgHash, e.j.Now())
	if !ok || len(tools) != 2 {
		t.Fatalf("cache %v %v", tools, ok)
	}
}

func TestRootsEnvAndCwd(t *testing.T) {
	cwd := t.TempDir()
	e := newEnv(t, &Options{Cwd: cwd})
	ctx := testCtx(t)
	serverDir := t.TempDir()
	cfg := stdio(t, "fx", "only=roots,env,cwd", "roots-on-init")
	cfg.Env = map[string]string{"FIXTURE_VAR": "from-config"}
	cfg.Cwd = serverDir
	other := stdio(t, "rel", "only=cwd")
	other.Cwd = "sub"
	if err := mkdir(filepath.Join(cwd, "sub")); err != nil {
		t.Fatal(err)
	}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg, other, stdio(t, "plain", "only=cwd")}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	r, err := tool(t, e.m, "mcp_fx_roots").Call(ctx, nil)
	if err != nil || r.Result.IsError {
		t.Fatalf("roots: %+v %v", r, err)
	}
	want := (&url.URL{Scheme: "file", Path: cwd}).String()
	contains(t, "roots", string(structuredJSON(r)), want)
	r, _ = tool(t, e.m, "mcp_fx_env").Call(ctx, map[string]any{"name": "FIXTURE_VAR"})
	if r.Text() != "from-config" {
		t.Fatalf("env: %+v", r)
	}
	r, _ = tool(t, e.m, "mcp_fx_env").Call(ctx, map[string]any{"name": "PATH"})
	if r.Text() == "" {
		t.Fatal("parent environment not inherited")
	}
	for name, dir := range map[string]string{"mcp_fx_cwd": serverDir, "mcp_rel_cwd": filepath.Join(cwd, "sub"), "mcp_plain_cwd": cwd} {
		r, _ = tool(t, e.m, name).Call(ctx, nil)
		if got, _ := filepath.EvalSymlinks(r.Text()); got != evalSymlinks(dir) {
			t.Errorf("%s: cwd %q, want %q", name, r.Text(), dir)
		}
	}
}

func TestHTTPAndSSEWithHeaders(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	httpURL := fixturetest.ServeHTTP(t, "only=echo", "require-header=Authorization:Bearer tok-42")
	sseURL := fixturetest.ServeSSE(t, "only=add", "require-header=X-Api-Key:key-42")
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{
		{Name: "web", URL: httpURL, Headers: map[string]string{"Authorization": "Bearer tok-42"}},
		{Name: "legacy", Type: "sse", URL: sseURL, Headers: map[string]string{"X-Api-Key": "key-42"}},
		{Name: "noauth", URL: httpURL},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "tools", toolNames(res.Tools), []string{"mcp_legacy_add", "mcp_web_echo"})
	if res.Errors["noauth"] == nil {
		t.Fatal("server without the header connected")
	}
	r, err := tool(t, e.m, "mcp_web_echo").Call(ctx, map[string]any{"text": "over http"})
	if err != nil || r.Text() != "over http" {
		t.Fatalf("http call: %+v %v", r, err)
	}
	r, err = tool(t, e.m, "mcp_legacy_add").Call(ctx, map[string]any{"a": 1, "b": 2})
	if err != nil || r.Result.IsError {
		t.Fatalf("sse call: %+v %v", r, err)
	}
	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range ofType[*events.ServerDiscovered](e, "s1") {
		for _, v := range d.Config.Headers {
			if v != events.Redacted {
				t.Errorf("header value recorded: %q", v)
			}
		}
	}
}

func TestSecretsNeverStored(t *testing.T) {
	const secret = "s3cr3t-value-5f2a9"
	resolver := resolverFunc(func(_ context.Context, v string) (string, error) {
		if v == "SECRET_REF" {
			return secret, nil
		}
		return v, nil
	})
	e := newEnv(t, &Options{Resolver: resolver, CaptureArguments: true})
	ctx := testCtx(t)
	httpURL := fixturetest.ServeHTTP(t, "only=echo", "require-header=Authorization:"+secret)
	good := stdio(t, "good", "only=env")
	good.Env = map[string]string{"API_KEY": "SECRET_REF"}
	// A server that prints its secret to stderr and fails.
	leaky := events.ServerConfig{Name: "leaky", Command: "sh", Args: []string{"-c", `echo "key is $API_KEY" >&2; exit 3`}, Env: map[string]string{"API_KEY": "SECRET_REF"}}
	web := events.ServerConfig{Name: "web", URL: httpURL + "?token=abc-secret-token", Headers: map[string]string{"Authorization": "SECRET_REF"}}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{good, leaky, web}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors["leaky"] == nil || strings.Contains(res.Errors["leaky"].Error(), secret) {
		t.Fatalf("leaky error: %v", res.Errors["leaky"])
	}
	contains(t, "leaky error", res.Errors["leaky"].Error(), "key is "+events.Redacted)
	r, err := tool(t, e.m, "mcp_good_env").Call(ctx, map[string]any{"name": "API_KEY"})
	if err != nil || r.Text() != secret {
		t.Fatalf("resolved env not passed: %+v %v", r, err)
	}
	if _, ok := res.Errors["web"]; ok {
		t.Fatalf("web: %v", res.Errors["web"])
	}
	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
	for env, err := range e.st.ReadAll(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(env)
		for _, s := range []string{secret, "abc-secret-token"} {
			if strings.Contains(string(b), s) {
				t.Errorf("secret %q in stored %s: %s", s, env.Type, b)
			}
		}
	}
}

func TestPaginationFiltersAndInstructions(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	paged := stdio(t, "paged", "only=", "tools=7", "page-size=2", "long-instructions=5000")
	filtered := stdio(t, "filtered", "only=echo,add,fail")
	filtered.EnabledTools = []string{"echo", "a*"}
	filtered.DisabledTools = []string{"add"}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{paged, filtered}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	equal(t, "tools", toolNames(res.Tools), []string{
		"mcp_filtered_echo",
		"mcp_paged_tool_1", "mcp_paged_tool_2", "mcp_paged_tool_3", "mcp_paged_tool_4", "mcp_paged_tool_5", "mcp_paged_tool_6", "mcp_paged_tool_7",
	})
	if got := len([]rune(e.m.Instructions("paged"))); got != maxInstructions {
		t.Fatalf("instructions: %d characters", got)
	}
	listed := ofType[*events.ToolsListed](e, "s1")
	for _, l := range listed {
		if l.Server == "paged" && l.Count != 7 {
			t.Fatalf("paged list count %d", l.Count)
		}
	}
}

func mkdir(dir string) error { return os.MkdirAll(dir, 0o755) }

func evalSymlinks(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func TestSSEDropIsRecorded(t *testing.T) {
	e := newEnv(t, noReconnect)
	ctx := testCtx(t)
	url := fixturetest.ServeSSE(t, "only=crash,echo")
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "web", Type: "sse", URL: url}}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := tool(t, e.m, "mcp_web_crash").Call(ctx, nil)
	if err != nil || !r.Result.IsError || !strings.HasPrefix(r.Text(), ErrorPrefix) {
		t.Fatalf("crash call: %+v %v", r, err)
	}
	waitFor(t, ctx, updates, func() bool { return e.m.Status("web") == projector.StatusDisconnected })
	d := ofType[*events.Disconnected](e, "s1")
	if len(d) != 1 || d[0].Reason != events.ReasonTransportClosed || d[0].ExitStatus != nil {
		t.Fatalf("disconnected %+v", d)
	}
}

func TestStderrFloodDoesNotBlockAndIsBounded(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{
		stdio(t, "flood", "only=echo", "stderr-flood=4MiB", "fail-init"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := res.Errors["flood"].Error()
	if !strings.Contains(msg, "stderr: …") || len(msg) > errStderrLimit+1024 {
		t.Fatalf("error of %d bytes: %.300q", len(msg), msg)
	}
	cf := ofType[*events.ConnectFailed](e, "s1")
	if len(cf) != 1 || len(cf[0].Error) > errStderrLimit+1024 {
		t.Fatalf("recorded error of %d bytes", len(cf[0].Error))
	}
}
