//go:build unix

package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
)

// hungStore is a memory store whose appends and reads of the sequence
// block while it is frozen, as a SQLite file on a disk that stopped
// answering does: nothing fails, nothing returns.
type hungStore struct {
	store.Store
	mu      sync.Mutex
	thawed  chan struct{} // nil while not frozen
	blocked chan struct{} // (cap 1) an operation is blocked
}

func newHungStore() *hungStore {
	return &hungStore{Store: memory.New(), blocked: make(chan struct{}, 1)}
}

func (h *hungStore) freeze() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.thawed == nil {
		h.thawed = make(chan struct{})
	}
}

func (h *hungStore) thaw() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.thawed != nil {
		close(h.thawed)
		h.thawed = nil
	}
}

func (h *hungStore) wait() {
	h.mu.Lock()
	ch := h.thawed
	h.mu.Unlock()
	if ch != nil {
		select {
		case h.blocked <- struct{}{}:
		default:
		}
		<-ch
	}
}

func (h *hungStore) Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	h.wait()
	return h.Store.Append(ctx, stream, expected, envs)
}

func (h *hungStore) LastSeq(ctx context.Context) (uint64, error) {
	h.wait()
	return h.Store.LastSeq(ctx)
}

func (h *hungStore) ReadStream(ctx context.Context, stream string, from uint64) iter.Seq2[events.Envelope, error] {
	return h.Store.ReadStream(ctx, stream, from)
}

// A store whose appends hang stops nothing but the recording: calls,
// Status, Tools and a disconnect go on, and Close tears every server down
// within its context, leaves no process, and logs how many events it
// could not record. Once the store answers again what was handed to the
// journal is stored in order.
func TestHungStoreStopsOnlyTheRecording(t *testing.T) {
	st := newHungStore()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	// No bound on the store's answers (a local file cannot be given up
	// on), and a short journal queue, so that it fills.
	j, err := journal.New(st, &journal.Options{StoreTimeout: -1, DeferredQueue: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer st.thaw()
	m, err := New(j, "hung", &Options{Gate: time.Minute, Cwd: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	const n = 8
	var cfgs []events.ServerConfig
	for i := range n {
		cfgs = append(cfgs, stdio(t, fmt.Sprintf("s%d", i), "only=echo,pid"))
	}
	res, err := m.ConnectServers(ctx, cfgs, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	var pids []int
	for i := range n {
		pids = append(pids, processInfo(t, m, fmt.Sprintf("s%d", i)).PID)
	}

	st.freeze()
	// Far more events than the journal queues: every call still returns.
	for i := range 40 {
		r, err := tool(t, m, "mcp_s0_echo").Call(ctx, map[string]any{"text": fmt.Sprint(i)})
		if err != nil || r.Result.IsError || r.Text() != fmt.Sprint(i) {
			t.Fatalf("call %d with the store hung: %+v %v", i, r, err)
		}
	}
	select {
	case <-st.blocked:
	case <-ctx.Done():
		t.Fatal("the journal never reached the store")
	}
	if got := m.Status("s1"); got != projector.StatusConnected {
		t.Errorf("Status = %s, want connected", got)
	}
	if len(m.Tools()) != 2*n {
		t.Errorf("Tools = %d, want %d", len(m.Tools()), 2*n)
	}

	// A disconnect ends the server at once; only its record waits.
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = m.DisconnectServer(dctx, "s7")
	cancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("DisconnectServer: %v", err)
	}
	waitNotRunning(t, ctx, pids[7])

	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	begin := time.Now()
	if err := m.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with the store hung = %v, want its context's error", err)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("Close took %v with a 1s context", took)
	}
	for _, pid := range pids {
		if proc.Running(pid) {
			t.Errorf("process %d survived Close", pid)
		}
	}
	if l := logs.String(); !strings.Contains(l, "not recorded") {
		t.Errorf("Close did not say what it could not record; log:\n%s", l)
	}

	// Back: what the journal took is stored, in order, calls complete.
	st.thaw()
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	started, finished := 0, 0
	for env, err := range st.ReadStream(ctx, "hung", 1) {
		if err != nil {
			t.Fatal(err)
		}
		switch env.Type {
		case events.TypeToolCallStarted:
			started++
		case events.TypeToolCallFinished:
			finished++
			if finished > started {
				t.Fatalf("ToolCallFinished %d stored before its start", finished)
			}
		}
	}
	if started == 0 {
		t.Error("nothing of the calls made while the store hung was stored")
	}
}

// waitNotRunning waits until pid is gone (the reaper may take a moment
// after the teardown signalled it).
func waitNotRunning(t *testing.T, ctx context.Context, pid int) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for proc.Running(pid) {
		select {
		case <-ctx.Done():
			t.Fatalf("process %d still runs", pid)
		case <-tick.C:
		}
	}
}

// While the store hangs, server logs are dropped once the manager is far
// behind, and counted: one ServerLog with Dropped set says how many, before
// the server's next event once recording resumed.
//
// It runs in a bubble, since it depends on two things no call's return
// tells: the server sends no log before it took the level the manager asks
// for, which goes beside the first tools/list; and the client handles a
// server's log messages on a goroutine of their own, so a call may return
// before the messages it caused reached the manager. Waiting for the
// bubble to settle after the connect and after the calls makes every log
// reach the outbox while the store hangs.
func TestHungStoreDropsServerLogsAndCountsThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newHungStore()
		j, err := journal.New(st, &journal.Options{StoreTimeout: -1, DeferredQueue: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		defer st.thaw()
		ls := &logServer{}
		e := &env{t: t, st: st, j: j, session: "logs"}
		m := e.manager("logs", &Options{ServerLogLevel: events.LogDebug})
		m.dial = ls.dial
		// No deadline: a bubble whose goroutines all wait fails at once.
		ctx := context.Background()
		if _, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "chatty", Command: "unused"}}, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the server took the log level: it sends its logs
		if n := ls.setLevels.Load(); n != 1 {
			t.Fatalf("logging/setLevel sent %d times, want 1", n)
		}
		m.out.mu.Lock()
		m.out.logDropAt = 10
		m.out.mu.Unlock()
		st.freeze()
		for range 4 {
			// 16 logs in all, under the rate limit of 20 a second: the
			// first few fill the queues, later ones are dropped.
			callLog(t, m, logArgs{Level: "info", Text: "x", Count: 4})
		}
		synctest.Wait() // every log message was handled, with the store hung
		st.thaw()
		if err := m.flush(ctx); err != nil {
			t.Fatal(err)
		}
		callLog(t, m, logArgs{Level: "info", Text: "after"})
		synctest.Wait() // the log sent after recording resumed was handled
		if err := m.flush(ctx); err != nil {
			t.Fatal(err)
		}
		var dropped, recorded int
		after := false
		for _, l := range ofType[*events.ServerLog](e, "logs") {
			if l.Logger == "mcplife" {
				dropped += l.Dropped
				continue
			}
			recorded++
			after = after || l.Text == "after"
		}
		if !after {
			t.Fatalf("the log sent after recording resumed was not recorded (%d recorded, %d dropped)", recorded, dropped)
		}
		if dropped == 0 || dropped+recorded != 17 {
			t.Errorf("recorded %d logs and %d dropped, want 17 in all with some dropped", recorded, dropped)
		}
	})
}

// The events the pump took from the outbox but could not hand to the
// journal yet are behind as much as those still in the outbox: with the
// journal's queue full and the pump waiting for room with a log it took,
// the next log is dropped, not queued, and counted once recording resumed.
func TestHungStoreCountsWhatThePumpHoldsAsBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newHungStore()
		j, err := journal.New(st, &journal.Options{StoreTimeout: -1, DeferredQueue: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		defer st.thaw()
		ls := &logServer{}
		e := &env{t: t, st: st, j: j, session: "held"}
		m := e.manager("held", &Options{ServerLogLevel: events.LogDebug})
		m.dial = ls.dial
		ctx := context.Background()
		if _, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "chatty", Command: "unused"}}, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the pump is idle
		m.out.mu.Lock()
		m.out.logDropAt = 1
		m.out.mu.Unlock()
		st.freeze()
		log := func(text string) {
			m.emitDeferred("", &events.ServerLog{Server: "chatty", Level: events.LogInfo, Text: text})
		}
		log("journal") // takes the journal's one place, which the hung store keeps
		log("pump")    // the outbox's: the pump takes it and waits for room
		synctest.Wait()
		m.out.mu.Lock()
		queued, busy := len(m.out.q), m.out.busy
		m.out.mu.Unlock()
		if queued != 0 || !busy {
			t.Fatalf("the pump does not hold the second log: %d queued, busy %v", queued, busy)
		}
		log("dropped")
		st.thaw()
		if err := m.flush(ctx); err != nil {
			t.Fatal(err)
		}
		log("after")
		if err := m.flush(ctx); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range ofType[*events.ServerLog](e, "held") {
			got = append(got, fmt.Sprintf("%s %d", l.Text, l.Dropped))
		}
		want := []string{"journal 0", "pump 0", "1 log messages dropped: the store fell behind 1", "after 0"}
		if !slices.Equal(got, want) {
			t.Errorf("logs stored %q, want %q", got, want)
		}
	})
}

// A PostgreSQL server that stops answering mid-session (stopped with
// SIGSTOP: its connections hang rather than fail) stops nothing but the
// recording, and Close tears every server down within its context.
func TestFrozenPostgresDoesNotHoldTheTeardown(t *testing.T) {
	srv := pgtest.StartServer(t)
	ctx := testCtx(t)
	db, err := postgres.Open(ctx, srv.ConnString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j, err := journal.New(db, &journal.Options{StoreTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	m, err := New(j, "frozen", &Options{Gate: time.Minute, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	var cfgs []events.ServerConfig
	for i := range n {
		cfgs = append(cfgs, stdio(t, fmt.Sprintf("s%d", i), "only=echo,pid"))
	}
	if res, err := m.ConnectServers(ctx, cfgs, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	var pids []int
	for i := range n {
		pids = append(pids, processInfo(t, m, fmt.Sprintf("s%d", i)).PID)
	}
	srv.Freeze()
	for i := range 20 {
		if r, err := tool(t, m, "mcp_s1_echo").Call(ctx, map[string]any{"text": "x"}); err != nil || r.Result.IsError {
			t.Fatalf("call %d with the database frozen: %+v %v", i, r, err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	begin := time.Now()
	m.Close(cctx)
	if took := time.Since(begin); took > 15*time.Second {
		t.Errorf("Close took %v with a 3s context", took)
	}
	for _, pid := range pids {
		if proc.Running(pid) {
			t.Errorf("process %d survived Close", pid)
		}
	}
	srv.Thaw()
}

// BenchmarkCloseWithHungStore measures Close of a manager with 20
// connected stdio servers while every append hangs (the store stopped
// answering after the connects, with 40 calls recorded since), bounded by
// a 5 s context: "processes-gone-ms" is the median time until the last
// server process was gone, "close-ms" the median time Close took to
// return (it waits for the store until its context ends),
// "close-max-ms" the longest; every round checks that no server process
// is left.
func BenchmarkCloseWithHungStore(b *testing.B) {
	const n = 20
	cmd, args := fixturetest.Command(b, "only=echo,pid")
	var took, gone []time.Duration
	for b.Loop() {
		b.StopTimer()
		st := newHungStore()
		j, err := journal.New(st, &journal.Options{StoreTimeout: -1, DeferredQueue: 8})
		if err != nil {
			b.Fatal(err)
		}
		m, err := New(j, "hung", &Options{Gate: time.Minute, Cwd: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		var cfgs []events.ServerConfig
		for i := range n {
			cfgs = append(cfgs, events.ServerConfig{Name: fmt.Sprintf("s%d", i), Command: cmd, Args: args})
		}
		if res, err := m.ConnectServers(ctx, cfgs, nil); err != nil || len(res.Errors) > 0 {
			b.Fatal(res.Errors, err)
		}
		var pids []int
		for i := range n {
			t, _ := m.Tool(fmt.Sprintf("mcp_s%d_pid", i))
			r, err := t.Call(ctx, nil)
			if err != nil || r.Result.IsError {
				b.Fatal(r, err)
			}
			var info fixture.ProcessInfo
			if err := json.Unmarshal(structuredJSON(r), &info); err != nil {
				b.Fatal(err)
			}
			pids = append(pids, info.PID)
		}
		st.freeze()
		echo, _ := m.Tool("mcp_s0_echo")
		for i := range 40 {
			if _, err := echo.Call(ctx, map[string]any{"text": fmt.Sprint(i)}); err != nil {
				b.Fatal(err)
			}
		}
		<-st.blocked
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		b.StartTimer()
		begin := time.Now()
		closed := make(chan struct{})
		go func() { m.Close(cctx); close(closed) }()
		// Look every millisecond for the processes: the time until the
		// last is gone is the teardown's.
		for _, pid := range pids {
			for proc.Running(pid) {
				select {
				case <-closed:
					if proc.Running(pid) {
						b.Fatalf("process %d survived Close", pid)
					}
				case <-time.After(time.Millisecond):
				}
			}
		}
		gone = append(gone, time.Since(begin))
		<-closed
		took = append(took, time.Since(begin))
		b.StopTimer()
		cancel()
		st.thaw()
		j.Close()
		b.StartTimer()
	}
	slices.Sort(took)
	slices.Sort(gone)
	b.ReportMetric(float64(gone[len(gone)/2])/1e6, "processes-gone-ms")
	b.ReportMetric(float64(took[len(took)/2])/1e6, "close-ms")
	b.ReportMetric(float64(took[len(took)-1])/1e6, "close-max-ms")
}
