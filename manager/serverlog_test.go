package manager

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/store/memory"
)

// logServer is an in-memory go-sdk server (which sends logs only at or
// above the level the client asked for) with a tool "log" that sends the
// log messages its arguments describe. setLevels counts logging/setLevel
// requests.
type logServer struct {
	setLevels atomic.Int32
	protocol  string // the protocol the client offers; "" for the default
	// leveled are the methods of the requests whose _meta carried a log
	// level, in order.
	mu      sync.Mutex
	leveled []string
}

type logArgs struct {
	Level  string `json:"level"`
	Logger string `json:"logger"`
	Text   string `json:"text"`
	Data   any    `json:"data"`
	Count  int    `json:"count"`
}

func (ls *logServer) dial(name string, _ events.ServerConfig, _ transport.Resolved, _ string) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil) // advertises logging
	mcp.AddTool(srv, &mcp.Tool{Name: "log"}, func(ctx context.Context, req *mcp.CallToolRequest, in logArgs) (*mcp.CallToolResult, any, error) {
		data := in.Data
		if data == nil {
			data = in.Text
		}
		for range max(in.Count, 1) {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(in.Level), Logger: in.Logger, Data: data}); err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil, nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "logging/setLevel" {
				ls.setLevels.Add(1)
			}
			if p := req.GetParams(); p != nil {
				if _, ok := p.GetMeta()[mcp.MetaKeyLogLevel]; ok {
					ls.mu.Lock()
					ls.leveled = append(ls.leveled, method)
					ls.mu.Unlock()
				}
			}
			return next(ctx, method, req)
		}
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// records collects the manager logger's records.
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// serverLogs returns the records whose message is msg, as "LEVEL
// key=value…", texts of 40 bytes or more left out.
func (r *records) serverLogs(msg string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.list {
		if rec.Message != msg {
			continue
		}
		s := rec.Level.String()
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key != "text" || len(a.Value.String()) < 40 {
				s += " " + a.String()
			}
			return true
		})
		out = append(out, s)
	}
	return out
}

// logEnv starts a manager of session "s" on a memory journal, logging to
// recs, with one server "chatty" of ls connected; call it inside a
// synctest bubble. The manager and journal close when the bubble's test
// ends.
func logEnv(t *testing.T, ls *logServer, opts Options, recs *records) (*Manager, *journal.Journal) {
	t.Helper()
	j := memJournal(t, memory.New())
	opts.Cwd = t.TempDir()
	opts.Logger = slog.New(recs)
	if ls.protocol != "" {
		opts.ProtocolVersion = ls.protocol
	}
	m, err := New(j, "s", &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()); j.Close() })
	m.dial = ls.dial
	cfg := events.ServerConfig{Name: "chatty", Command: "x", Env: map[string]string{"API_TOKEN": "tok-3f9a8b7c6d5e"}}
	if res, err := m.ConnectServers(context.Background(), []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(res, err)
	}
	synctest.Wait() // logging/setLevel, sent beside the first list, has been answered
	return m, j
}

// logsOf returns the session's ServerLog events.
func logsOf(t *testing.T, j *journal.Journal) []*events.ServerLog {
	t.Helper()
	if err := j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out []*events.ServerLog
	for env, err := range j.Store().ReadStream(context.Background(), "s", 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Type != events.TypeServerLog {
			continue
		}
		ev, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev.(*events.ServerLog))
	}
	return out
}

func callLog(t *testing.T, m *Manager, args logArgs) {
	t.Helper()
	r, err := tool(t, m, "mcp_chatty_log").Call(context.Background(), args)
	if err != nil || r.Result.IsError {
		t.Fatalf("log call: %+v %v", r, err)
	}
}

// TestServerLogsRecorded: a server that advertises logging is asked for
// info and above; its messages become ServerLog events (level, logger,
// text scrubbed of the connection's secrets, non-string data as JSON, a
// long text cut with a marker) and records of the manager's logger at the
// matching level with the server's name.
func TestServerLogsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := &logServer{}
		recs := &records{}
		m, j := logEnv(t, ls, Options{}, recs)
		if n := ls.setLevels.Load(); n != 1 {
			t.Fatalf("%d logging/setLevel requests, want 1", n)
		}
		callLog(t, m, logArgs{Level: "debug", Text: "not asked for"})
		callLog(t, m, logArgs{Level: "info", Logger: "db", Text: "connected with API_TOKEN tok-3f9a8b7c6d5e"})
		callLog(t, m, logArgs{Level: "warning", Data: map[string]any{"slow": true, "ms": 1200}})
		callLog(t, m, logArgs{Level: "critical", Text: strings.Repeat("x", 10_000)})
		synctest.Wait()
		logs := logsOf(t, j)
		if len(logs) != 3 {
			t.Fatalf("%d ServerLog events, want 3: %+v", len(logs), logs)
		}
		if l := logs[0]; l.Server != "chatty" || l.Level != events.LogInfo || l.Logger != "db" || l.Text != "connected with API_TOKEN "+events.Redacted {
			t.Errorf("info log %+v", l)
		}
		if l := logs[1]; l.Level != events.LogWarning || l.Text != `{"ms":1200,"slow":true}` {
			t.Errorf("warning log %+v", l)
		}
		if l := logs[2]; l.Level != events.LogCritical || len(l.Text) > maxServerLogText+64 || !strings.HasSuffix(l.Text, "… [cut: 10000 bytes in all]") {
			t.Errorf("critical log of %d bytes ends %q", len(l.Text), l.Text[max(0, len(l.Text)-40):])
		}
		want := []string{
			`INFO server=chatty level=info text=connected with API_TOKEN <redacted> logger=db`,
			`WARN server=chatty level=warning text={"ms":1200,"slow":true}`,
			`ERROR server=chatty level=critical`, // its long text left out here
		}
		if got := recs.serverLogs("MCP server log"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("logger records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, rec := range recs.list {
			rec.Attrs(func(a slog.Attr) bool {
				if strings.Contains(a.Value.String(), "tok-3f9a8b7c6d5e") {
					t.Errorf("logger record %q holds the secret", rec.Message)
				}
				return true
			})
		}
	})
}

// TestServerLogFloodIsBounded: of a burst of log messages, serverLogRate
// a second are recorded; one more ServerLog, at the end of the second,
// says how many were dropped, and the next second records again.
func TestServerLogFloodIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		recs := &records{}
		m, j := logEnv(t, &logServer{}, Options{}, recs)
		callLog(t, m, logArgs{Level: "info", Text: "flood", Count: 100})
		synctest.Wait()
		if n := len(logsOf(t, j)); n != serverLogRate {
			t.Fatalf("%d ServerLog events within the second, want %d", n, serverLogRate)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		logs := logsOf(t, j)
		if len(logs) != serverLogRate+1 {
			t.Fatalf("%d ServerLog events after the second, want %d", len(logs), serverLogRate+1)
		}
		if l := logs[serverLogRate]; l.Dropped != 100-serverLogRate || l.Level != events.LogWarning || l.Logger != "mcplife" || !strings.Contains(l.Text, "80 log messages dropped") {
			t.Errorf("drop summary %+v", l)
		}
		if got := recs.serverLogs("MCP server log messages dropped"); len(got) != 1 || !strings.Contains(got[0], "dropped=80") {
			t.Errorf("logger records of the drop: %q", got)
		}
		callLog(t, m, logArgs{Level: "info", Text: "again", Count: 3})
		synctest.Wait()
		if logs := logsOf(t, j); len(logs) != serverLogRate+4 || logs[len(logs)-1].Text != "again" {
			t.Errorf("%d ServerLog events in the next second, want %d", len(logs), serverLogRate+4)
		}
	})
}

// TestServerLogsOff: with ServerLogLevel off the server is not asked for
// logs and nothing is recorded.
func TestServerLogsOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := &logServer{}
		m, j := logEnv(t, ls, Options{ServerLogLevel: ServerLogsOff}, &records{})
		callLog(t, m, logArgs{Level: "error", Text: "unheard"})
		synctest.Wait()
		if n, logs := ls.setLevels.Load(), logsOf(t, j); n != 0 || len(logs) != 0 {
			t.Errorf("%d logging/setLevel requests, %d ServerLog events; want none", n, len(logs))
		}
	})
}

// TestServerLogsPerRequest: under protocol 2026-07-28, which has no
// logging/setLevel, the level goes in each call's _meta, and the logs the
// server sends while answering are recorded.
func TestServerLogsPerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := &logServer{protocol: modernProtocol}
		m, j := logEnv(t, ls, Options{}, &records{})
		callLog(t, m, logArgs{Level: "debug", Text: "below info"})
		callLog(t, m, logArgs{Level: "notice", Text: "during the call"})
		synctest.Wait()
		logs := logsOf(t, j)
		if n := ls.setLevels.Load(); n != 0 || len(logs) != 1 || logs[0].Text != "during the call" || logs[0].Level != events.LogNotice {
			t.Errorf("%d logging/setLevel requests, ServerLog %+v; want none and the notice", n, logs)
		}
		// Every request that can make the server log carries the level:
		// the connect's tools/list too, not only the calls.
		ls.mu.Lock()
		leveled := slices.Clone(ls.leveled)
		ls.mu.Unlock()
		if want := []string{"tools/list", "tools/call", "tools/call"}; !slices.Equal(leveled, want) {
			t.Errorf("requests with the log level in _meta: %v, want %v", leveled, want)
		}
	})
}

func TestUnknownServerLogLevelRefused(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := New(e.j, "s2", &Options{ServerLogLevel: "chatty"}); err == nil || !strings.Contains(err.Error(), `unknown ServerLogLevel "chatty"`) {
		t.Fatalf("New: %v", err)
	}
}
