package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/trace"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/manager"
)

// connected is one side's set of connected servers, ready to be closed.
type connected struct {
	close func() error
}

// connect starts cfgs with sd (bare clients, or a manager that waits for
// every server) and waits until they are idle: the connect's events are
// stored and the goroutine count has settled.
func connect(b *testing.B, sd *side, n int, behaviour string) connected {
	b.Helper()
	ctx := context.Background()
	cfgs := configs(b, n, behaviour)
	var c connected
	if sd.j == nil {
		sessions := bareStart(b, ctx, cfgs)
		c.close = func() error { closeAll(sessions); return nil }
	} else {
		m := newManager(b, sd, manager.Options{Gate: time.Minute})
		res, err := m.ConnectServers(ctx, cfgs, nil)
		if err != nil || len(res.Errors) > 0 {
			b.Fatalf("%s: connect: %v %v", sd.name, res.Errors, err)
		}
		c.close = func() error { return m.Close(ctx) }
		if err := sd.j.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	settle()
	return c
}

// settle waits (at most a second) until the number of goroutines has
// been the same for five looks 10 ms apart: the goroutines a connect
// left behind have ended or parked.
func settle() {
	last, same := runtime.NumGoroutine(), 0
	for range 100 {
		time.Sleep(10 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n != last {
			last, same = n, 0
			continue
		}
		if same++; same == 5 {
			return
		}
	}
}

// BenchmarkClose tears 20 connected, idle stdio servers down: Manager.Close
// (every server's process group stopped, every Disconnected stored)
// against closing 20 bare go-sdk ClientSessions in parallel. The connect
// is not timed. It reports each side's median and p99 over the rounds,
// the median paired ratio (SIDE/bare) and the ratio of the p99s
// (SIDE-p99/bare). Each close is a trace region "close SIDE". Goal:
// ≤ 2×.
func BenchmarkClose(b *testing.B) {
	const n = 20
	ss := sides(b)
	regions := map[string]string{}
	for _, sd := range ss {
		regions[sd.name] = "close " + sd.name
	}
	ctx := context.Background()
	s := samples{}
	round := 0
	for b.Loop() {
		for _, sd := range order(ss, round) {
			b.StopTimer()
			c := connect(b, sd, n, "only=echo,add")
			b.StartTimer()
			r := trace.StartRegion(ctx, regions[sd.name])
			start := time.Now()
			err := c.close()
			d := time.Since(start)
			r.End()
			if err != nil {
				b.Fatalf("%s: close: %v", sd.name, err)
			}
			s[sd.name] = append(s[sd.name], d)
		}
		round++
	}
	s.reportRatios(b, ss, "")
	s.reportTail(b, ss, "ms")
}

// BenchmarkIdle connects 50 stdio servers with each side, waits until
// they are idle, and reports what each idle connected server holds in the
// host process, medians over the rounds, with the ratios to bare:
// goroutines ("SIDE-goroutines/server"; those a function of mcplife
// started or runs, the go-sdk's excluded, as
// "SIDE-mcplife-goroutines/server"), live heap after a GC
// ("SIDE-heap-KiB/server", from HeapAlloc; for the memory store it
// includes the stored events) and in-use heap spans
// ("SIDE-heapinuse-KiB/server", from HeapInuse, which spans freed by the
// side before can hide). The first round logs, per side, the goroutines
// per server by the function that started them.
func BenchmarkIdle(b *testing.B) {
	const n = 50
	ss := sides(b)
	type figures struct{ goroutines, own, heap, inuse []float64 }
	got := map[string]*figures{}
	for _, sd := range ss {
		got[sd.name] = &figures{}
	}
	round := 0
	for b.Loop() {
		for _, sd := range order(ss, round) {
			settle()
			before := footprint()
			c := connect(b, sd, n, "only=echo,add")
			after := footprint()
			if err := c.close(); err != nil {
				b.Fatalf("%s: close: %v", sd.name, err)
			}
			f := got[sd.name]
			f.goroutines = append(f.goroutines, float64(after.goroutines-before.goroutines)/n)
			f.own = append(f.own, float64(after.own()-before.own())/n)
			f.heap = append(f.heap, float64(int64(after.heapAlloc)-int64(before.heapAlloc))/n/1024)
			f.inuse = append(f.inuse, float64(int64(after.heapInuse)-int64(before.heapInuse))/n/1024)
			if round == 0 {
				var by []string
				for creator, k := range after.creators {
					if d := k - before.creators[creator]; d >= n/2 {
						by = append(by, fmt.Sprintf("%s %.2f", creator, float64(d)/n))
					}
				}
				slices.Sort(by)
				b.Logf("%s goroutines per server by creator: %s", sd.name, strings.Join(by, "; "))
			}
		}
		round++
	}
	bare := got["bare"]
	for _, sd := range ss {
		f := got[sd.name]
		b.ReportMetric(medianF(f.goroutines), sd.name+"-goroutines/server")
		b.ReportMetric(medianF(f.heap), sd.name+"-heap-KiB/server")
		b.ReportMetric(medianF(f.inuse), sd.name+"-heapinuse-KiB/server")
		if sd.name == "bare" {
			continue
		}
		b.ReportMetric(medianF(f.own), sd.name+"-mcplife-goroutines/server")
		if g := medianF(bare.goroutines); g > 0 {
			b.ReportMetric(medianF(f.goroutines)/g, sd.name+"-goroutines/bare")
		}
		if h := medianF(bare.heap); h > 0 {
			b.ReportMetric(medianF(f.heap)/h, sd.name+"-heap/bare")
		}
	}
}

// usage is what the process holds at one moment.
type usage struct {
	goroutines           int
	creators             map[string]int // goroutines by the function that started them
	heapAlloc, heapInuse uint64
}

// own returns how many goroutines functions of mcplife (outside this
// package) started.
func (u usage) own() int {
	n := 0
	for creator, k := range u.creators {
		creator = strings.TrimPrefix(creator, "WaitGroup.Go ")
		if strings.HasPrefix(creator, "github.com/mcplife/mcplife/") && !strings.HasPrefix(creator, "github.com/mcplife/mcplife/bench.") {
			n += k
		}
	}
	return n
}

// footprint returns what the process holds after a GC.
func footprint() usage {
	runtime.GC()
	runtime.GC() // what the first one's finalizers freed
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u := usage{goroutines: runtime.NumGoroutine(), creators: creators(), heapAlloc: ms.HeapAlloc, heapInuse: ms.HeapInuse}
	return u
}

// creators counts the goroutines by the function that started them; for
// one started by sync.WaitGroup.Go, by the function it was given.
func creators() map[string]int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]int{}
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		// "goroutine N [state]:", then a function line and a file line per
		// frame, innermost first, then "created by F in goroutine M" and
		// its file line.
		lines := strings.Split(g, "\n")
		var funcs []string
		creator := ""
		for i := 1; i < len(lines); i += 2 {
			if c, ok := strings.CutPrefix(lines[i], "created by "); ok {
				creator, _, _ = strings.Cut(c, " in goroutine ")
				break
			}
			f := lines[i]
			if k := strings.LastIndex(f, "("); k > 0 {
				f = f[:k]
			}
			funcs = append(funcs, f)
		}
		if creator == "" {
			continue
		}
		if creator == "sync.(*WaitGroup).Go" && len(funcs) >= 2 {
			creator = "WaitGroup.Go " + funcs[len(funcs)-2]
		}
		out[creator]++
	}
	return out
}
