package bench

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager"
)

// BenchmarkReconnect kills a connected stdio server with SIGKILL and
// measures how long until a call to it succeeds again: the drop is
// noticed, a reconnect follows after the first backoff delay (0.5 s, no
// jitter here) and the call made right after the kill waits for it. The
// baseline, from the same run, is a cold start of the same server by the
// bare go-sdk client. Goal: the killed server serves calls again within
// 1.5 s.
//
//	go test ./bench -run '^$' -bench Reconnect -benchtime 20x
func BenchmarkReconnect(b *testing.B) {
	ctx := context.Background()
	sd := newSide(b, "memory")
	cfgs := configs(b, 1, "only=echo")
	// Every kill comes soon after the last reconnect; counted as a crash
	// loop they would trip the breaker, which is not what is measured.
	m := newManager(b, sd, manager.Options{Gate: time.Minute, Reconnect: manager.ReconnectPolicy{NoJitter: true, StableAfter: time.Nanosecond}})
	defer m.Close(ctx)
	if _, err := m.ConnectServers(ctx, cfgs, nil); err != nil {
		b.Fatal(err)
	}
	echo := func() bool {
		for _, tl := range m.Tools() {
			if tl.Original == "echo" {
				r, err := tl.Call(ctx, map[string]any{"text": "x"})
				return err == nil && !r.Result.IsError
			}
		}
		return false
	}
	var back, cold []time.Duration
	for b.Loop() {
		start := time.Now()
		sessions := bareStart(b, ctx, cfgs)
		cold = append(cold, time.Since(start))
		closeAll(sessions)

		pid := serverPid(b, sd, m.Session(), cfgs[0].Name)
		start = time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		// A call that reaches the dying connection fails (echo is not
		// read-only, so it is not retried); the next waits for the
		// reconnect.
		for !echo() {
			if time.Since(start) > 10*time.Second {
				b.Fatal("no answer within 10 s of the kill")
			}
		}
		back = append(back, time.Since(start))
	}
	b.ReportMetric(float64(median(back))/1e6, "back-ms")
	b.ReportMetric(float64(percentile(back, 0.99))/1e6, "back-p99-ms")
	b.ReportMetric(float64(median(cold))/1e6, "bare-cold-start-ms")
}

// serverPid returns the pid the session's latest ServerConnected of
// server recorded.
func serverPid(b *testing.B, sd *side, session, server string) int {
	b.Helper()
	if err := sd.j.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	pid := 0
	for env, err := range sd.st.ReadStream(context.Background(), session, 1) {
		if err != nil {
			b.Fatal(err)
		}
		if env.Type != events.TypeServerConnected {
			continue
		}
		ev, err := events.Decode(env)
		if err != nil {
			b.Fatal(err)
		}
		if c := ev.(*events.ServerConnected); c.Server == server {
			pid = c.Pid
		}
	}
	if pid == 0 {
		b.Fatal("no pid recorded")
	}
	return pid
}
