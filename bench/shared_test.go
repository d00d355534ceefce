package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/peers"
	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/internal/sharedhost"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/store/memory"
)

// sharedBench is a shared host served in this process on a socket of the
// benchmark's, recording into the memory store as its hosts do.
type sharedBench struct {
	b      *testing.B
	j      *journal.Journal
	socket string
}

// newHosts returns the benchmark's hosts' side: their memory journal and
// a socket path for the shared host.
func newHosts(b *testing.B) *sharedBench {
	b.Helper()
	j, err := journal.New(memory.New(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return &sharedBench{b: b, j: j, socket: filepath.Join(b.TempDir(), "run", shared.SocketName)}
}

func newSharedBench(b *testing.B) *sharedBench {
	b.Helper()
	sb := newHosts(b)
	j := sb.j
	l, err := shared.Listen(sb.socket)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sharedhost.Serve(ctx, l, j, "shared", &sharedhost.Options{Idle: time.Hour}) }()
	b.Cleanup(func() {
		cancel()
		<-served
	})
	return sb
}

// newSharedProcess starts a shared host in a process of its own, as
// `mcp-audit daemon` runs for users (its own heap, collector and
// scheduler), and returns its socket; the process ends when the benchmark
// does.
func newSharedProcess(b *testing.B) *sharedBench {
	b.Helper()
	sb := newHosts(b)
	cmd := helper(b, "shared-host", fleetArgs{Socket: sb.socket})
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close() // its end of stdin ends the shared host
		cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("shared host process: %q %v", line, err)
	}
	return sb
}

// sharedHostRole is the process of newSharedProcess: a shared host on
// a.Socket recording into a memory store, which prints "ready" once it
// listens and stops when its stdin ends.
func sharedHostRole(a fleetArgs) error {
	j, err := journal.New(memory.New(), nil)
	if err != nil {
		return err
	}
	defer j.Close()
	l, err := shared.Listen(a.Socket)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Println("ready")
	return sharedhost.Serve(ctx, l, j, "shared", &sharedhost.Options{Idle: time.Hour})
}

// manager returns a host's manager; share says whether it attaches its
// stdio servers to the shared host.
func (sb *sharedBench) manager(session, cwd string, share bool) *manager.Manager {
	sb.b.Helper()
	o := &manager.Options{Cwd: cwd, Gate: time.Minute, Logger: slog.New(slog.DiscardHandler)}
	if share {
		o.Share = &manager.ShareOptions{Socket: sb.socket, NoStart: true}
	}
	m, err := manager.New(sb.j, session, o)
	if err != nil {
		sb.b.Fatal(err)
	}
	sb.b.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func connectAll(b *testing.B, m *manager.Manager, cfgs []events.ServerConfig) *manager.ConnectResult {
	b.Helper()
	res, err := m.ConnectServers(b.Context(), cfgs, nil)
	if err != nil || len(res.Errors) > 0 {
		b.Fatalf("connect: %v %v", err, res.Errors)
	}
	return res
}

// BenchmarkSharedCall: one echo call on the fixture run by the host's own
// manager over stdio ("direct") against one through the shared host
// ("shared"), 200 calls per side per round, the sides taking turns call
// by call; p50 and p99 over every call and their ratios.
func BenchmarkSharedCall(b *testing.B) {
	benchSharedCall(b, newSharedBench(b))
}

// BenchmarkSharedCallProcess is BenchmarkSharedCall with the shared host
// in a process of its own, as `mcp-audit daemon` runs it.
func BenchmarkSharedCallProcess(b *testing.B) {
	benchSharedCall(b, newSharedProcess(b))
}

func benchSharedCall(b *testing.B, sb *sharedBench) {
	cmd, args := fixturetest.Command(b)
	cfg := []events.ServerConfig{{Name: "fx", Command: cmd, Args: args}}
	tools := map[string]*manager.Tool{}
	for _, side := range []string{"direct", "shared"} {
		m := sb.manager(side, b.TempDir(), side == "shared")
		connectAll(b, m, cfg)
		t, ok := m.Tool("mcp_fx_echo")
		if !ok {
			b.Fatal("no echo")
		}
		tools[side] = t
	}
	in := map[string]any{"text": "hi"}
	took := map[string][]time.Duration{}
	for b.Loop() {
		for range 200 {
			for _, side := range []string{"direct", "shared"} {
				t0 := time.Now()
				if res, err := tools[side].Call(b.Context(), in); err != nil || res.Err != nil {
					b.Fatal(err, res.Err)
				}
				took[side] = append(took[side], time.Since(t0))
			}
		}
	}
	for _, side := range []string{"direct", "shared"} {
		b.ReportMetric(float64(percentile(took[side], 0.5).Microseconds()), side+"-µs")
		b.ReportMetric(float64(percentile(took[side], 0.99).Microseconds()), side+"-p99-µs")
	}
	b.ReportMetric(float64(percentile(took["shared"], 0.5))/float64(percentile(took["direct"], 0.5)), "shared/direct")
	b.ReportMetric(float64(percentile(took["shared"], 0.99))/float64(percentile(took["direct"], 0.99)), "shared-p99/direct")
}

// BenchmarkSharedAttach: a host connecting 10 fixture servers that
// another host keeps running in the shared host (each server's attach,
// whose answer opens its stream and stands for server/discover and the
// first tools/list, in parallel), until it has all their tools; median
// and p99 over the rounds.
func BenchmarkSharedAttach(b *testing.B) {
	sb := newSharedBench(b)
	cfgs := configs(b, 10)
	cwd := b.TempDir()
	connectAll(b, sb.manager("keeper", cwd, true), cfgs)
	var took []time.Duration
	n := 0
	for b.Loop() {
		n++
		m := sb.manager("host"+strconv.Itoa(n), cwd, true)
		t0 := time.Now()
		res := connectAll(b, m, cfgs)
		took = append(took, time.Since(t0))
		if len(res.Tools) == 0 {
			b.Fatal("no tools")
		}
		b.StopTimer()
		m.Close(b.Context())
		b.StartTimer()
	}
	b.ReportMetric(float64(median(took).Microseconds())/1e3, "attach-ms")
	b.ReportMetric(float64(percentile(took, 0.99).Microseconds())/1e3, "attach-p99-ms")
}

// BenchmarkSharedFanout: 5 hosts each connecting the same 10 servers (the
// fixture, and server-everything on node), unshared and shared. It
// reports the server processes running (children of this process: the
// shared host runs here too) and their total RSS in MiB, per side. The
// hosts are managers in this one process; their own memory is not part
// of the figure.
func BenchmarkSharedFanout(b *testing.B) {
	node, script := peers.Everything(b)
	// Ten different servers: identical configs would share one process.
	fx := configs(b, 10)
	var ev []events.ServerConfig
	for i := range fx {
		slot := map[string]string{"BENCH_SLOT": strconv.Itoa(i)}
		fx[i].Env = slot
		ev = append(ev, events.ServerConfig{Name: fmt.Sprintf("ev%02d", i), Command: node, Args: []string{script, "stdio"}, Env: slot})
	}
	kinds := map[string][]events.ServerConfig{"fixture": fx, "everything": ev}
	for _, kind := range []string{"fixture", "everything"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				for _, share := range []bool{false, true} {
					side := "unshared"
					if share {
						side = "shared"
					}
					procs, rss := fanout(b, kinds[kind], share)
					b.ReportMetric(float64(procs), side+"-procs")
					b.ReportMetric(float64(rss)/(1<<20), side+"-rss-MiB")
				}
			}
		})
	}
}

// fanout connects 5 hosts to cfgs and counts the server processes and
// their RSS, then closes everything.
func fanout(b *testing.B, cfgs []events.ServerConfig, share bool) (procs int, rss int64) {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	j, err := journal.New(memory.New(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	socket := filepath.Join(b.TempDir(), "run", shared.SocketName)
	served := make(chan error, 1)
	if share {
		l, err := shared.Listen(socket)
		if err != nil {
			b.Fatal(err)
		}
		go func() { served <- sharedhost.Serve(ctx, l, j, "shared", &sharedhost.Options{Idle: time.Hour}) }()
	}
	cwd := b.TempDir()
	var ms []*manager.Manager
	for i := range 5 {
		o := &manager.Options{Cwd: cwd, Gate: time.Minute, Logger: slog.New(slog.DiscardHandler)}
		if share {
			o.Share = &manager.ShareOptions{Socket: socket, NoStart: true}
		}
		m, err := manager.New(j, "host"+strconv.Itoa(i), o)
		if err != nil {
			b.Fatal(err)
		}
		ms = append(ms, m)
		if res, err := m.ConnectServers(ctx, cfgs, nil); err != nil || len(res.Errors) > 0 {
			b.Fatalf("connect: %v %v", err, res.Errors)
		}
	}
	procs, rss = children(os.Getpid())
	for _, m := range ms {
		m.Close(context.WithoutCancel(ctx))
	}
	if share {
		cancel()
		<-served
	}
	return procs, rss
}

// children counts the live child processes of pid and sums their RSS
// (from /proc).
func children(pid int) (n int, rss int64) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		var ppid int
		var kb int64
		zombie := false
		for line := range strings.SplitSeq(string(st), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "PPid:":
				ppid, _ = strconv.Atoi(f[1])
			case "VmRSS:":
				kb, _ = strconv.ParseInt(f[1], 10, 64)
			case "State:":
				zombie = f[1] == "Z"
			}
		}
		if ppid == pid && !zombie {
			n++
			rss += kb << 10
		}
	}
	return n, rss
}
