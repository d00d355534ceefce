package manager_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/internal/sharedhost"
	"github.com/mcplife/mcplife/manager"
)

// legacyProtocol is the protocol under which a subscribe is a request
// answered once the server took it (under 2026-07-28 it opens a
// subscriptions/listen whose start nobody waits for), so each step of
// the subscription tests is done when its call returns.
const legacyProtocol = "2025-11-25"

// next returns the next value of ch, failing the test when none comes.
func next(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-shareCtx(t).Done():
		t.Fatalf("%s: nothing came", what)
		return ""
	}
}

// rawHost attaches a go-sdk client to the shared host as host session,
// speaking legacyProtocol; its resource updates arrive on the returned
// channel.
func rawHost(t *testing.T, e *shareEnv, session, cwd string) (*mcp.ClientSession, string, <-chan string) {
	t.Helper()
	c, err := shared.Dial(shareCtx(t), e.socket, shared.Hello{Session: session, Pid: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	att, err := c.Attach(shareCtx(t), shared.Attach{Name: "subs", Config: events.ServerConfig{Command: "in-memory"}, Command: "in-memory", Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	updates := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: session, Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI },
	})
	cs, err := client.Connect(shareCtx(t), c.Transport(att), &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, att.Instance, updates
}

// TestShareResourceSubscriptions attaches two hosts to one shared server
// that offers subscriptions: the relay offers them too, subscribes the
// server to a URI once however many hosts subscribed to it, unsubscribes
// it when the last of them unsubscribed or its session ended, and tells
// each host of the updates of the URIs it subscribed to, and only those.
func TestShareResourceSubscriptions(t *testing.T) {
	const r1, r2, r3 = "test://r/1", "test://r/2", "test://r/3"
	asked := make(chan string, 16) // what the server was asked, in order
	srv := mcp.NewServer(&mcp.Implementation{Name: "subs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			asked <- "subscribe " + req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			asked <- "unsubscribe " + req.Params.URI
			return nil
		},
	})
	for _, uri := range []string{r1, r2, r3} {
		srv.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
		})
	}
	e := newShareEnv(t)
	e.serveWith(&sharedhost.Options{Idle: time.Hour, Manager: &manager.Options{
		ProtocolVersion: legacyProtocol,
		Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, st, nil); err != nil {
				return nil, err
			}
			return ct, nil
		},
	}})
	cwd := t.TempDir()
	h1, in1, got1 := rawHost(t, e, "host1", cwd)
	h2, in2, got2 := rawHost(t, e, "host2", cwd)
	if in1 != in2 {
		t.Fatalf("instances %s and %s, want one", in1, in2)
	}
	if caps := h1.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
		t.Fatalf("the relay does not offer subscriptions: %+v", caps.Resources)
	}
	ctx := shareCtx(t)
	sub := func(cs *mcp.ClientSession, uri string) {
		t.Helper()
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	unsub := func(cs *mcp.ClientSession, uri string) {
		t.Helper()
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatalf("unsubscribe %s: %v", uri, err)
		}
	}
	want := func(what, w string) {
		t.Helper()
		if got := next(t, asked, what); got != w {
			t.Fatalf("%s: the server was asked %q, want %q", what, got, w)
		}
	}

	sub(h1, r1)
	want("the first subscriber", "subscribe "+r1)
	sub(h2, r1) // the server has it already
	sub(h2, r2)
	want("host2's subscriptions", "subscribe "+r2)
	sub(h1, r3)
	want("host1's second", "subscribe "+r3)

	// The relay tells its hosts in the order of the server's updates, and
	// a host's stream keeps it: once a host has the update of r1 (both
	// subscribed to it, sent last), it has every earlier one meant for it.
	for _, uri := range []string{r2, r3, r1} {
		if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	for host, c := range map[string]struct {
		got  <-chan string
		want []string
	}{"host1": {got1, []string{r3, r1}}, "host2": {got2, []string{r2, r1}}} {
		var got []string
		for !slices.Contains(got, r1) {
			got = append(got, next(t, c.got, host+"'s updates"))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s was told of %q, want %q", host, got, c.want)
		}
	}

	unsub(h1, r1) // host2 still has it
	unsub(h2, r2)
	want("the last subscriber of r2 left", "unsubscribe "+r2)
	unsub(h2, r1)
	want("the last subscriber of r1 left", "unsubscribe "+r1)
	h1.Close() // still subscribed to r3
	want("host1's session ended", "unsubscribe "+r3)
	h2.Close()
	select {
	case a := <-asked:
		t.Errorf("after the last unsubscribe the server was asked %q", a)
	default:
	}
}

// TestShareResourceUpdatedFixture subscribes two hosts of one shared
// fixture server to its resources: the fixture, which tells of an update
// of every URI it has a subscription of, tells the shared host once per
// URI, and each host hears of the URIs it is still subscribed to.
func TestShareResourceUpdatedFixture(t *testing.T) {
	e := newShareEnv(t)
	e.serveWith(&sharedhost.Options{Idle: time.Millisecond, Manager: &manager.Options{ProtocolVersion: legacyProtocol}})
	update := fixturetest.NewGate(t)
	cmd, args := fixturetest.Command(t, "only=echo", "resources=3", update.Arg("update-resource-on-release"))
	cfg := events.ServerConfig{Name: "fx", Command: cmd, Args: args}
	cwd := t.TempDir()
	reported := map[string]chan string{"host1": make(chan string, 8), "host2": make(chan string, 8)}
	var ms []*manager.Manager
	for _, name := range []string{"host1", "host2"} {
		m := e.manager(name, cwd, func(o *manager.Options) {
			o.ProtocolVersion = legacyProtocol
			o.OnResourceUpdated = func(server, uri string) { reported[name] <- server + " " + uri }
		})
		if res, err := m.ConnectServers(shareCtx(t), []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
			t.Fatalf("connect: %v %v", err, res.Errors)
		}
		ms = append(ms, m)
	}
	m1, m2 := ms[0], ms[1]
	ctx := shareCtx(t)
	for _, s := range []struct {
		m   *manager.Manager
		on  bool
		uri string
	}{
		{m1, true, "fixture://r/1"}, {m1, true, "fixture://r/2"},
		{m2, true, "fixture://r/1"}, {m2, true, "fixture://r/3"},
		{m1, false, "fixture://r/1"}, // host2 still has it
		{m2, false, "fixture://r/3"}, // the last: the fixture no longer has it
	} {
		var err error
		if s.on {
			err = s.m.SubscribeResource(ctx, "fx", s.uri)
		} else {
			err = s.m.UnsubscribeResource(ctx, "fx", s.uri)
		}
		if err != nil {
			t.Fatalf("%s: subscribe %v %s: %v", s.m.Session(), s.on, s.uri, err)
		}
	}
	update.Release()
	if got := next(t, reported["host1"], "host1's update"); got != "fx fixture://r/2" {
		t.Errorf("host1 was told of %q, want fx fixture://r/2", got)
	}
	if got := next(t, reported["host2"], "host2's update"); got != "fx fixture://r/1" {
		t.Errorf("host2 was told of %q, want fx fixture://r/1", got)
	}
	m1.Close(ctx)
	m2.Close(ctx)
	if err := e.ended(); err != nil {
		t.Fatal(err)
	}
	var recorded []string
	for _, u := range filter[*events.ResourceUpdated](e.events("shared")) {
		recorded = append(recorded, u.URI)
	}
	if want := []string{"fixture://r/1", "fixture://r/2"}; !slices.Equal(recorded, want) {
		t.Errorf("the shared host recorded updates of %q, want %q (one subscription per URI, none of r/3)", recorded, want)
	}
	for name, want := range map[string]string{"host1": "fixture://r/2", "host2": "fixture://r/1"} {
		us := filter[*events.ResourceUpdated](e.events(name))
		if len(us) != 1 || us[0].URI != want {
			t.Errorf("%s recorded updates %+v, want one of %s", name, us, want)
		}
	}
}

// TestShareResubscribeAfterReconnect drops the shared server's
// connection in the shared host: its reconnect has none of the earlier
// connection's subscriptions, so the shared host's manager subscribes it
// again to the URIs the relay's hosts are still subscribed to, once each,
// as the relay asked for them.
func TestShareResubscribeAfterReconnect(t *testing.T) {
	const r1, r2 = "test://r/1", "test://r/2"
	asked := make(chan string, 16)
	srv := mcp.NewServer(&mcp.Implementation{Name: "subs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			asked <- "subscribe " + req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			asked <- "unsubscribe " + req.Params.URI
			return nil
		},
	})
	for _, uri := range []string{r1, r2} {
		srv.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
		})
	}
	conns := make(chan *mcp.ServerSession, 4)
	e := newShareEnv(t)
	e.serveWith(&sharedhost.Options{Idle: time.Hour, Manager: &manager.Options{
		ProtocolVersion: legacyProtocol,
		Reconnect:       manager.ReconnectPolicy{Initial: time.Millisecond, NoJitter: true},
		Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				return nil, err
			}
			conns <- ss
			return ct, nil
		},
	}})
	h, _, _ := rawHost(t, e, "host1", t.TempDir())
	first := <-conns
	ctx := shareCtx(t)
	for _, uri := range []string{r1, r2} {
		if err := h.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		if got := next(t, asked, "subscribe "+uri); got != "subscribe "+uri {
			t.Fatalf("the server was asked %q", got)
		}
	}
	if err := h.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: r2}); err != nil {
		t.Fatal(err)
	}
	if got := next(t, asked, "unsubscribe "+r2); got != "unsubscribe "+r2 {
		t.Fatalf("the server was asked %q", got)
	}
	first.Close() // the shared host's connection drops; it reconnects
	select {
	case <-conns:
	case <-ctx.Done():
		t.Fatal("the shared host did not reconnect")
	}
	if got := next(t, asked, "the resubscribe"); got != "subscribe "+r1 {
		t.Fatalf("after the reconnect the server was asked %q, want subscribe %s (and nothing of %s)", got, r1, r2)
	}
	h.Close()
	if got := next(t, asked, "the host's end"); got != "unsubscribe "+r1 {
		t.Fatalf("after the host's end the server was asked %q, want unsubscribe %s", got, r1)
	}
}
