package manager

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
	"github.com/mcplife/mcplife/verify"
)

// fleetHost is one host of a fleet: its own connections to the shared
// PostgreSQL store and a journal stamping its host id.
func fleetHost(t *testing.T, conn, schema, host string) *journal.Journal {
	t.Helper()
	db, err := postgres.Open(t.Context(), conn, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.New(db, &journal.Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close(); db.Close() })
	return j
}

// sessionOn returns the envelopes of session in j's store.
func sessionOn(t *testing.T, j *journal.Journal, session string) []events.Envelope {
	t.Helper()
	if err := j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out []events.Envelope
	for env, err := range j.Store().ReadStream(context.Background(), session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

func closeManager(t *testing.T, m *Manager) {
	t.Helper()
	if err := m.Close(context.Background()); err != nil {
		t.Errorf("close: %v", err)
	}
}

// A server one host of a fleet listed is served from the cache, deferred,
// at another host's gate: the cache is the shared store's.
func TestFleetCacheServesAnotherHostsList(t *testing.T) {
	conn, schema := pgtest.Schema(t)
	ctx := testCtx(t)
	srv := stdio(t, "srv", "only=echo,add")

	a := fleetHost(t, conn, schema, "h-a")
	ma, err := New(a, "on-a", &Options{Gate: time.Minute, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := ma.ConnectServers(ctx, []events.ServerConfig{srv}, nil); err != nil || res.Gate.Outcomes["srv"] != events.OutcomeReady {
		t.Fatalf("host a: %+v, %v", res, err)
	}
	closeManager(t, ma)

	b := fleetHost(t, conn, schema, "h-b")
	mb, err := New(b, "on-b", &Options{EagerCache: true, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer closeManager(t, mb)
	res, err := mb.ConnectServers(ctx, []events.ServerConfig{srv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.Outcomes["srv"] != events.OutcomeDeferred {
		t.Fatalf("host b's gate: %v, want srv deferred from host a's list", res.Gate.Outcomes)
	}
	if got := toolNames(res.Tools); !slices.Equal(got, []string{"mcp_srv_add", "mcp_srv_echo"}) {
		t.Fatalf("host b's tools at the gate %v", got)
	}
	for session, host := range map[string]string{"on-a": "h-a", "on-b": "h-b"} {
		for _, env := range sessionOn(t, a, session) {
			if env.Host != host {
				t.Fatalf("%s: seq %d %s has host %q, want %q", session, env.Seq, env.Type, env.Host, host)
			}
		}
	}
}

// Two hosts connecting the same servers at once are both recorded in full,
// each session in order, and the shared cache ends with every server's
// list.
func TestFleetHostsConnectTheSameServersAtOnce(t *testing.T) {
	conn, schema := pgtest.Schema(t)
	ctx := testCtx(t)
	servers := []events.ServerConfig{stdio(t, "one", "only=echo"), stdio(t, "two", "only=echo,add"), stdio(t, "three", "tools=5")}
	hosts := map[string]*journal.Journal{"h-a": fleetHost(t, conn, schema, "h-a"), "h-b": fleetHost(t, conn, schema, "h-b")}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		tools = map[string][]string{}
	)
	for host, j := range hosts {
		wg.Go(func() {
			m, err := New(j, "session-"+host, &Options{Gate: time.Minute, Cwd: t.TempDir()})
			if err != nil {
				t.Error(err)
				return
			}
			defer closeManager(t, m)
			res, err := m.ConnectServers(ctx, servers, nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			tools[host] = toolNames(res.Tools)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(tools["h-a"]) < 3 || !slices.Equal(tools["h-a"], tools["h-b"]) {
		t.Errorf("tools: h-a %v, h-b %v; want the same tools of the three servers", tools["h-a"], tools["h-b"])
	}
	for host, j := range hosts {
		envs := sessionOn(t, j, "session-"+host)
		for _, v := range verify.Session("session-"+host, envs) {
			t.Errorf("%s: %s", host, v)
		}
		if n := len(envs); n == 0 || envs[n-1].Type != events.TypeDisconnected && envs[n-1].Type != events.TypeSessionClosed {
			t.Errorf("%s: session not recorded to its end (%d events)", host, n)
		}
	}
	cache := projector.NewToolCache()
	if err := hosts["h-a"].Attach(ctx, cache); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if tools, _, ok := cache.Lookup(s.Name, s.Hash(), time.Now()); !ok || len(tools) == 0 {
			t.Errorf("the shared cache has no list for %s", s.Name)
		}
	}
}
