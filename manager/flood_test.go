package manager

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/store/memory"
)

// heldHost answers elicitation and sampling by waiting until release is
// closed, and tells (over) when more of one method wait at once than the
// limit allows.
type heldHost struct {
	mu      sync.Mutex
	waiting map[string]int
	most    map[string]int
	entered chan string   // one per request that reached the host
	over    chan string   // the method whose limit was passed
	release chan struct{} // closed to answer the held ones
}

func newHeldHost() *heldHost {
	return &heldHost{waiting: map[string]int{}, most: map[string]int{}, entered: make(chan string, 4096),
		over: make(chan string, 1), release: make(chan struct{})}
}

func (h *heldHost) hold(ctx context.Context, method string) {
	h.mu.Lock()
	h.waiting[method]++
	h.most[method] = max(h.most[method], h.waiting[method])
	if h.waiting[method] > maxServerRequests {
		select {
		case h.over <- method:
		default:
		}
	}
	h.mu.Unlock()
	h.entered <- method
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	h.mu.Lock()
	h.waiting[method]--
	h.mu.Unlock()
}

func (h *heldHost) options() *Options {
	return &Options{
		Elicit: func(ctx context.Context, _ string, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			h.hold(ctx, methodElicit)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		},
		Sample: func(ctx context.Context, _ string, _ *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			h.hold(ctx, methodSample)
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "x"}}, nil
		},
	}
}

// TestServerRequestFloodIsBounded: a server (the fixture's flood tool)
// sends hundreds of elicitation, sampling and roots requests at once while
// the host holds every one it is asked. At most maxServerRequests of each
// method reach the host; the rest are declined at once (the server gets
// its answers while the host still holds the others), so the host's
// goroutines stay bounded; only the requests the host answered are
// recorded; one ServerMessagesLimited counts the declined ones; and the
// server's own tools list is recorded.
func TestServerRequestFloodIsBounded(t *testing.T) {
	const n = 300
	h := newHeldHost()
	e := newEnv(t, h.options())
	e.m.requestRate = 1 << 30 // the in-flight bound alone (TestServerRequestRate tests the rate)
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(h.release) }) }
	t.Cleanup(release) // before the manager closes, when the test fails
	ctx := testCtx(t)
	sub, err := e.j.Subscribe(ctx, journal.SubscribeOptions{FromSeq: 1, Session: "s1", Types: []string{events.TypeServerMessagesLimited}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "flood", "only=echo", "flood")}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(res, err)
	}
	answersTool := tool(t, e.m, "mcp_"+fixture.FloodAnswersTool) // not prefixed twice
	before := runtime.NumGoroutine()
	r, err := tool(t, e.m, "mcp_flood_flood").Call(ctx, map[string]any{"elicit": n, "sample": n, "roots": n})
	if err != nil || r.Result.IsError {
		t.Fatalf("flood: %+v %v", r, err)
	}
	// Every request but the held ones is answered while they are held.
	answers := make(chan *CallResult, 1)
	go func() {
		r, _ := answersTool.Call(ctx, map[string]any{"answered": 3*n - 2*maxServerRequests})
		answers <- r
	}()
	var got fixture.FloodAnswers
	select {
	case method := <-h.over:
		t.Fatalf("more than %d %s requests reached the host at once", maxServerRequests, method)
	case r := <-answers:
		if r == nil || r.Result.IsError {
			t.Fatalf("flood answers: %+v", r)
		}
		if err := json.Unmarshal([]byte(r.Text()), &got); err != nil {
			t.Fatal(err)
		}
	}
	if g := runtime.NumGoroutine(); g > before+2*maxServerRequests+150 {
		t.Errorf("%d goroutines while %d requests are held (%d before the flood)", g, 2*maxServerRequests, before)
	}
	h.mu.Lock()
	most := h.most
	h.mu.Unlock()
	if most[methodElicit] != maxServerRequests || most[methodSample] != maxServerRequests {
		t.Errorf("requests the host held at once: %v, want %d of each", most, maxServerRequests)
	}
	if d := got[methodElicit]["decline"]; d != n-maxServerRequests {
		t.Errorf("elicitations declined %d, want %d (answers %v)", d, n-maxServerRequests, got)
	}
	if d := got[methodSample]["error"]; d != n-maxServerRequests {
		t.Errorf("sampling requests refused %d, want %d (answers %v)", d, n-maxServerRequests, got)
	}
	rootsDeclined := got[methodRoots]["error"]
	if got[methodRoots]["ok"]+rootsDeclined != n {
		t.Errorf("roots answers %v, want %d", got[methodRoots], n)
	}
	release()

	// One summary counts what was declined.
	declined := map[string]int{}
	for declined[methodElicit] < n-maxServerRequests || declined[methodSample] < n-maxServerRequests {
		select {
		case env, ok := <-sub.C():
			if !ok {
				t.Fatal("subscription ended")
			}
			ev, err := events.Decode(env)
			if err != nil {
				t.Fatal(err)
			}
			for m, c := range ev.(*events.ServerMessagesLimited).Declined {
				declined[m] += c
			}
		case <-ctx.Done():
			t.Fatalf("declined so far %v", declined)
		}
	}
	if declined[methodElicit] != n-maxServerRequests || declined[methodSample] != n-maxServerRequests || declined[methodRoots] != rootsDeclined {
		t.Errorf("declined %v, want %d, %d and %d", declined, n-maxServerRequests, n-maxServerRequests, rootsDeclined)
	}
	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, env := range e.events("s1") {
		counts[env.Type]++
	}
	for _, typ := range []string{events.TypeElicitationRequested, events.TypeElicitationAnswered, events.TypeSamplingRequested, events.TypeSamplingAnswered} {
		if counts[typ] != maxServerRequests {
			t.Errorf("%d %s, want %d", counts[typ], typ, maxServerRequests)
		}
	}
	if counts[events.TypeToolsListed] != 1 {
		t.Errorf("%d ToolsListed, want 1", counts[events.TypeToolsListed])
	}
}

// floodServer dials in-memory servers whose tool "flood" sends count
// elicitation requests at once and returns when all are answered.
func floodServer(name string, _ events.ServerConfig, _ transport.Resolved, _ string) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	type args struct {
		Count int `json:"count"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "flood"}, func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		var wg sync.WaitGroup
		for range in.Count {
			wg.Go(func() {
				req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "m", RequestedSchema: map[string]any{"type": "object"}})
			})
		}
		wg.Wait()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// TestServerRequestRate: of a burst of elicitation requests, answered at
// once by the host, serverRequestRate a second are taken and recorded;
// the rest are declined, and one ServerMessagesLimited at the end of the
// second counts them. The next second takes requests again.
func TestServerRequestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := memJournal(t, memory.New())
		m, err := New(j, "s", &Options{Cwd: t.TempDir(), Elicit: DeclineElicitation})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(context.Background()); j.Close() })
		m.dial = floodServer
		if res, err := m.ConnectServers(context.Background(), []events.ServerConfig{{Name: "asker", Command: "x"}}, nil); err != nil || len(res.Errors) > 0 {
			t.Fatal(res, err)
		}
		count := func() (requested int, limited []*events.ServerMessagesLimited) {
			synctest.Wait()
			if err := j.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			for env, err := range j.Store().ReadStream(context.Background(), "s", 1) {
				if err != nil {
					t.Fatal(err)
				}
				switch env.Type {
				case events.TypeElicitationRequested:
					requested++
				case events.TypeServerMessagesLimited:
					ev, _ := events.Decode(env)
					limited = append(limited, ev.(*events.ServerMessagesLimited))
				}
			}
			return requested, limited
		}
		flood := func(n int) {
			r, err := tool(t, m, "mcp_asker_flood").Call(context.Background(), map[string]any{"count": n})
			if err != nil || r.Result.IsError {
				t.Fatalf("flood: %+v %v", r, err)
			}
		}
		flood(100)
		if req, lim := count(); req != serverRequestRate || len(lim) != 0 {
			t.Fatalf("%d ElicitationRequested and %d summaries within the second, want %d and 0", req, len(lim), serverRequestRate)
		}
		time.Sleep(time.Second)
		req, lim := count()
		if req != serverRequestRate || len(lim) != 1 || lim[0].Declined[methodElicit] != 100-serverRequestRate || lim[0].Server != "asker" {
			t.Fatalf("after the second: %d ElicitationRequested, summaries %+v", req, lim)
		}
		flood(3)
		if req, _ := count(); req != serverRequestRate+3 {
			t.Errorf("%d ElicitationRequested in the next second, want %d", req, serverRequestRate+3)
		}
	})
}

// TestResourceUpdateFlood: a server floods notifications/resources/updated
// for a resource the session subscribed to and for one it did not. The
// other resource's updates are not recorded but counted in
// ServerMessagesLimited; the subscribed one's are coalesced into a few
// ResourceUpdated events that together stand for every update, and the
// host is told of each recorded one.
func TestResourceUpdateFlood(t *testing.T) {
	const n = 500
	var mu sync.Mutex
	told := 0
	e := newEnv(t, &Options{OnResourceUpdated: func(string, string) { mu.Lock(); told++; mu.Unlock() }})
	ctx := testCtx(t)
	sub, err := e.j.Subscribe(ctx, journal.SubscribeOptions{FromSeq: 1, Session: "s1",
		Types: []string{events.TypeServerMessagesLimited, events.TypeResourceUpdated}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "res", "only=echo", "flood", "resources=2")}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(res, err)
	}
	sub1, other := fixture.ResourceURI(1, 2), fixture.ResourceURI(2, 2)
	if err := e.m.SubscribeResource(ctx, "res", sub1); err != nil {
		t.Fatal(err)
	}
	r, err := tool(t, e.m, "mcp_res_flood").Call(ctx, map[string]any{"updates": n, "uris": []string{sub1, other}})
	if err != nil || r.Result.IsError {
		t.Fatalf("flood: %+v %v", r, err)
	}
	var updates []*events.ResourceUpdated
	covered, ignored := 0, 0
	for covered < n || ignored < n {
		select {
		case env, ok := <-sub.C():
			if !ok {
				t.Fatal("subscription ended")
			}
			ev, err := events.Decode(env)
			if err != nil {
				t.Fatal(err)
			}
			switch ev := ev.(type) {
			case *events.ResourceUpdated:
				if ev.URI != sub1 {
					t.Fatalf("update of %s recorded; the session subscribed to %s only", ev.URI, sub1)
				}
				updates = append(updates, ev)
				covered += 1 + ev.Coalesced
			case *events.ServerMessagesLimited:
				ignored += ev.Ignored[methodResourceUpdated]
			}
		case <-ctx.Done():
			t.Fatalf("%d updates covered by %d events, %d ignored so far", covered, len(updates), ignored)
		}
	}
	if covered != n || ignored != n {
		t.Errorf("%d updates covered, %d ignored; want %d each", covered, ignored, n)
	}
	if len(updates) > n/10 {
		t.Errorf("%d ResourceUpdated events for %d updates", len(updates), n)
	}
	mu.Lock()
	if told != len(updates) {
		t.Errorf("host told %d times, %d recorded", told, len(updates))
	}
	mu.Unlock()
}

// floodPastTheDisconnect connects an in-memory flood server, has it send
// more elicitation requests in a second than its limits and
// maxDeclinedRequests allow, and returns what the session stored. Call it
// inside a synctest bubble.
func floodPastTheDisconnect(t *testing.T) []events.Envelope {
	t.Helper()
	j := memJournal(t, memory.New())
	m, err := New(j, "s", &Options{Cwd: t.TempDir(), Elicit: DeclineElicitation, Reconnect: ReconnectPolicy{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()); j.Close() })
	m.dial = floodServer
	if res, err := m.ConnectServers(context.Background(), []events.ServerConfig{{Name: "asker", Command: "x"}}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(res, err)
	}
	tool(t, m, "mcp_asker_flood").Call(context.Background(), map[string]any{"count": serverRequestRate + maxDeclinedRequests + 1})
	synctest.Wait()
	if err := j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var envs []events.Envelope
	for env, err := range j.Store().ReadStream(context.Background(), "s", 1) {
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	return envs
}

// TestServerRequestFloodDisconnects: a server that sends more requests in
// a second than maxDeclinedRequests beyond its limits is disconnected, and
// the Disconnected says why.
func TestServerRequestFloodDisconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d []*events.Disconnected
		for _, env := range floodPastTheDisconnect(t) {
			if env.Type == events.TypeDisconnected {
				ev, _ := events.Decode(env)
				d = append(d, ev.(*events.Disconnected))
			}
		}
		if len(d) != 1 || d[0].Error != "disconnected: the server sent more than 1000 requests in a second beyond its limits" {
			t.Fatalf("disconnected %+v", d)
		}
	})
}

// TestServerRequestFloodDisconnectKeepsCount: the requests declined
// before a flooding server is disconnected are recorded in one
// ServerMessagesLimited ahead of its Disconnected, although the
// connection they were counted on ends before the summary's second is
// over.
func TestServerRequestFloodDisconnectKeepsCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		declined, disconnected := 0, false
		for _, env := range floodPastTheDisconnect(t) {
			switch env.Type {
			case events.TypeServerMessagesLimited:
				if disconnected {
					t.Error("ServerMessagesLimited after the Disconnected")
				}
				ev, _ := events.Decode(env)
				declined += ev.(*events.ServerMessagesLimited).Declined[methodElicit]
			case events.TypeDisconnected:
				disconnected = true
			}
		}
		if !disconnected || declined != maxDeclinedRequests+1 {
			t.Fatalf("disconnected %v, %d declined requests recorded, want %d", disconnected, declined, maxDeclinedRequests+1)
		}
	})
}

// TestTeardownOfAServerThatStopsReading: a server floods elicitation
// requests and no longer reads its stdin, so the answers cannot be
// written. Disconnecting it still finishes: the process is terminated
// once the stdin grace is over, which ends the blocked writes.
func TestTeardownOfAServerThatStopsReading(t *testing.T) {
	e := newEnv(t, &Options{Gate: 200 * time.Millisecond, Elicit: DeclineElicitation, Reconnect: ReconnectPolicy{Disabled: true}})
	ctx := testCtx(t)
	sub, err := e.j.Subscribe(ctx, journal.SubscribeOptions{FromSeq: 1, Session: "s1", Types: []string{events.TypeServerMessagesLimited}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	cfg := stdio(t, "deaf", "only=echo", "deaf-flood=900")
	cfg.TimeoutMs = ms(2000) // its tools/list is never answered
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil {
		t.Fatal(err)
	}
	select { // the requests were taken or declined; their answers wait
	case <-sub.C():
	case <-ctx.Done():
		t.Fatal("no ServerMessagesLimited")
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := e.m.DisconnectServer(dctx, "deaf"); err != nil {
		e.m.mu.Lock()
		if s := e.m.servers["deaf"]; s != nil && s.conn != nil && s.conn.proc != nil {
			go s.conn.proc.Terminate() // let the test's cleanup finish
		}
		e.m.mu.Unlock()
		t.Fatalf("disconnect of a server that stopped reading: %v", err)
	}
}
