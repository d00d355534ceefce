package manager

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// serveHTTP serves ps over streamable HTTP, stateless as protocol
// 2026-07-28 wants it.
func serveHTTP(t *testing.T, ps *probeServer) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ps.srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	return hs
}

// TestModernHTTPServerStaysConnected: a modern server over streamable
// HTTP, left running for several health intervals, is checked with
// server/discover (never with ping, which it would refuse) and never
// dropped.
func TestModernHTTPServerStaysConnected(t *testing.T) {
	ps := newProbeServer()
	hs := serveHTTP(t, ps)
	e := newEnv(t, &Options{ProtocolVersion: "2026-07-28", Health: HealthOptions{Interval: 20 * time.Millisecond}})
	ctx := testCtx(t)
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "web", Type: "http", URL: hs.URL}}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("connect: %v %v", err, res.Errors)
	}
	ps.await(t, ctx, "server/discover", 1+5) // the connect's, then five checks
	if n := ps.count("ping"); n != 0 {
		t.Errorf("%d pings sent to a server without ping", n)
	}
	var protocols []string
	for _, ev := range e.decoded(e.session) {
		switch x := ev.(type) {
		case *events.Disconnected:
			t.Errorf("a healthy server was dropped: %s", events.Describe(x))
		case *events.ServerConnected:
			protocols = append(protocols, x.ProtocolVersion)
		}
	}
	equal(t, "protocols", protocols, []string{"2026-07-28"})
}

// TestListenStreamCutIsADrop: a server whose subscriptions/listen
// stream is cut (its connections closed, as by a restart) is dropped and
// reconnected, and the reconnect's listen brings its list changes again.
func TestListenStreamCutIsADrop(t *testing.T) {
	ps := newProbeServer()
	hs := serveHTTP(t, ps)
	e := newEnv(t, &Options{ProtocolVersion: "2026-07-28", Health: HealthOptions{Interval: -1},
		Reconnect: ReconnectPolicy{Initial: time.Millisecond, NoJitter: true}})
	ctx := testCtx(t)
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "web", Type: "http", URL: hs.URL}}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("connect: %v %v", err, res.Errors)
	}
	ps.await(t, ctx, "acked", 1)
	hs.CloseClientConnections()

	ps.await(t, ctx, "acked", 1) // the reconnect's listen
	waitFor(t, ctx, updates, func() bool {
		return len(ofType[*events.ToolsListed](e, e.session)) == 2 // the reconnect's first list
	})
	ps.addTool("later")
	waitFor(t, ctx, updates, func() bool { return slices.Contains(toolNames(e.m.Tools()), "mcp_web_later") })

	story := lifeStory(e.decoded(e.session), events.TypeServerConnected)
	want := []string{
		"ServerConnected web protocol=2026-07-28 peer=a",
		"ToolsListed web cause=initial tools=[echo]",
		`Disconnected web reason=transport closed reconnecting=true error="the subscriptions/listen stream ended without its final response"`,
		`ReconnectScheduled web attempt=2 delayMs=1 cause="transport closed"`,
		"ConnectStarted web transport=http attempt=2 round=0",
		"ServerConnected web protocol=2026-07-28 peer=a",
		"ToolsListed web cause=reconnect tools=[echo]",
		"ToolListChanged web",
		"ToolsListed web cause=list-changed tools=[echo later]",
	}
	if got := strings.Join(story, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
