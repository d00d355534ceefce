package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager/internal/transport"
)

// Server logs are the notifications/message a server sends. Each becomes
// a ServerLog event and a record of the manager's logger (at the matching
// level, with the server's name), bounded in size and in rate so that a
// chatty server can fill neither the store nor the log.
//
// Servers built with the go-sdk send nothing until the client asks for a
// level (logging/setLevel, or under protocol 2026-07-28 a level in each
// request's _meta), and other servers send everything unless asked. So the
// manager asks every server that advertises logging for
// [Options.ServerLogLevel] (info by default), and records nothing below
// that level whoever sent it.

// Limits of server logs.
const (
	// maxServerLogText is the longest text a ServerLog records, in bytes;
	// a longer message is cut with a marker giving its length.
	maxServerLogText = 4 << 10
	// serverLogRate is how many log messages of one connection are
	// recorded (and logged) per second. The rest of that second's are
	// dropped; one ServerLog (Dropped set) says how many, at the end of
	// the second.
	serverLogRate = 20
	// ServerLogsOff as [Options.ServerLogLevel] asks servers for no logs
	// and records none.
	ServerLogsOff events.LogLevel = "off"
)

// logLevels ranks the MCP logging levels, lowest first.
var logLevels = map[events.LogLevel]int{
	events.LogDebug: 0, events.LogInfo: 1, events.LogNotice: 2, events.LogWarning: 3,
	events.LogError: 4, events.LogCritical: 5, events.LogAlert: 6, events.LogEmergency: 7,
}

// logRank returns the rank of level; a level a server invented ranks as
// info.
func logRank(level events.LogLevel) int {
	if r, ok := logLevels[level]; ok {
		return r
	}
	return logLevels[events.LogInfo]
}

// slogLevel maps an MCP level onto the manager's logger.
func slogLevel(level events.LogLevel) slog.Level {
	switch r := logRank(level); {
	case r == logLevels[events.LogDebug]:
		return slog.LevelDebug
	case r <= logLevels[events.LogNotice]:
		return slog.LevelInfo
	case r == logLevels[events.LogWarning]:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// logLimiter is the rate limit of one connection's log messages. Its
// fields are guarded by the manager's mutex.
type logLimiter struct {
	start   time.Time     // of the current one-second window
	n       int           // messages recorded in the window
	dropped int           // messages dropped since the last summary
	due     chan struct{} // (cap 1) the summary loop has drops to report
	looping bool          // the summary loop was started (at the first drop)
}

// askForLogs decides, from cs's initialize result, how the connection asks
// its server for logs: with logging/setLevel once connected (setLevel),
// or with the level in every request's _meta (perRequest). A server that
// does not advertise logging is not asked.
func (m *Manager) askForLogs(cs *mcp.ClientSession) (setLevel, perRequest bool) {
	init := cs.InitializeResult()
	if m.opts.ServerLogLevel == ServerLogsOff || init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return false, false
	}
	if modernEra(init.ProtocolVersion) {
		return false, true
	}
	return true, false
}

// setServerLogLevel sends logging/setLevel to a connected server. A
// failure is logged at Debug: logs are best effort.
func (m *Manager) setServerLogLevel(s *server, lc *liveConn) {
	ctx := lc.ctx
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	err := lc.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(m.opts.ServerLogLevel)})
	if err != nil && lc.ctx.Err() == nil {
		m.log.Debug("MCP server did not take the log level", "server", s.name, "level", m.opts.ServerLogLevel, "err", lc.res.ScrubText(err.Error()))
	}
}

// serverLogHandler returns the client's handler of s's log messages on
// lc. It runs on the connection's reading goroutine, so it never waits
// for the store: the event is queued (emitDeferred), and it is queued
// under m.mu only while s is not being torn down, so it always comes
// before the server's Disconnected.
func (m *Manager) serverLogHandler(s *server, lc *liveConn) func(context.Context, *mcp.LoggingMessageRequest) {
	return func(_ context.Context, req *mcp.LoggingMessageRequest) {
		if req == nil || req.Params == nil || m.opts.ServerLogLevel == ServerLogsOff {
			return
		}
		p := req.Params
		level := events.LogLevel(p.Level)
		if logRank(level) < logRank(m.opts.ServerLogLevel) {
			return // below what was asked for
		}
		ev := &events.ServerLog{Server: s.name, Level: level, Logger: boundText(lc.res, p.Logger, 256), Text: boundText(lc.res, logText(p.Data), maxServerLogText)}
		now := time.Now()
		l := &lc.logs
		if s.ending() {
			return // on its way out: not worth m.mu
		}
		m.mu.Lock()
		if s.ending() {
			m.mu.Unlock()
			return
		}
		if l.start.IsZero() || now.Sub(l.start) >= time.Second {
			l.start, l.n = now, 0
		}
		if l.n >= serverLogRate {
			l.dropped++
			if l.dropped == 1 {
				select {
				case l.due <- struct{}{}:
				default:
				}
			}
			start := !l.looping
			l.looping = true
			m.mu.Unlock()
			if start {
				m.goOwned(func() { m.serverLogLoop(s, lc) })
			}
			return
		}
		l.n++
		m.emitDeferred("", ev)
		m.mu.Unlock()
		attrs := []any{"server", s.name, "level", string(level), "text", ev.Text}
		if ev.Logger != "" {
			attrs = append(attrs, "logger", ev.Logger)
		}
		m.log.Log(context.Background(), slogLevel(level), "MCP server log", attrs...)
	}
}

// serverLogLoop records the drop summaries of lc's log messages: after the
// first drop of a one-second window it waits for the window's end, then
// records how many were dropped. It is started at the connection's first
// drop, so servers that never flood cost no goroutine, and ends with s's
// context (the teardown cancels it); drops not yet reported then are not
// recorded.
func (m *Manager) serverLogLoop(s *server, lc *liveConn) {
	l := &lc.logs
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-l.due:
		}
		m.mu.Lock()
		wait := time.Until(l.start.Add(time.Second))
		m.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		m.mu.Lock()
		n := l.dropped
		l.dropped = 0
		if n == 0 || s.ending() {
			m.mu.Unlock()
			continue
		}
		m.emitDeferred("", &events.ServerLog{
			Server: s.name, Level: events.LogWarning, Logger: "mcplife", Dropped: n,
			Text: fmt.Sprintf("%d log messages dropped: the server sent more than %d in a second", n, serverLogRate),
		})
		m.mu.Unlock()
		m.log.Warn("MCP server log messages dropped", "server", s.name, "dropped", n, "limit", fmt.Sprintf("%d a second", serverLogRate))
	}
}

// logText returns a log message's data as text: a string as it is,
// anything else as its JSON.
func logText(data any) string {
	switch d := data.(type) {
	case nil:
		return ""
	case string:
		return d
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Sprint(data)
	}
	return string(b)
}

// boundText scrubs s of res's secrets and credential-like pairs and cuts
// it to max bytes, ending a cut text with a marker that gives the length.
// A huge text is cut before it is scrubbed, so scrubbing stays cheap; what
// that first cut leaves is still far more than max.
func boundText(res transport.Resolved, s string, max int) string {
	all := len(s)
	s = cutUTF8(s, 4*max)
	s = res.ScrubText(s)
	if all <= max && len(s) <= max {
		return s
	}
	return cutUTF8(s, max) + fmt.Sprintf("… [cut: %d bytes in all]", all)
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does
// not split a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// logMeta returns the _meta that asks the server of lc for its logs at the
// manager's level in a request, when the connection takes the level per
// request (protocol 2026-07-28, which has no logging/setLevel); nil
// otherwise. Every request that can make the server log carries it.
func (m *Manager) logMeta(lc *liveConn) mcp.Meta {
	if !lc.logsPerRequest {
		return nil
	}
	return mcp.Meta{mcp.MetaKeyLogLevel: string(m.opts.ServerLogLevel)}
}
