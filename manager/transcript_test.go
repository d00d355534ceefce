package manager

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

// transcriptOf returns the stored transcript of e's session.
func transcriptOf(t *testing.T, e *env) []store.TranscriptLine {
	t.Helper()
	lines, err := e.st.(store.TranscriptStore).ReadTranscript(t.Context(), e.session)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// methods returns "dir method" of each line that has a method, and
// "dir result" of each answer.
func methods(lines []store.TranscriptLine, server string) []string {
	var out []string
	for _, l := range lines {
		if l.Server != server {
			continue
		}
		var m struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(l.Message), &m) != nil {
			continue
		}
		switch {
		case m.Method != "":
			out = append(out, l.Direction+" "+m.Method)
		case m.Result != nil:
			out = append(out, l.Direction+" result")
		}
	}
	return out
}

// A server whose config records its transcript has every message in and
// out kept beside the events, and no secret the connection resolved (a
// configured env value, a value a !command resolved to, an inherited
// credential, a header value) is in it, although the server says each of
// them back. A server without it keeps none.
func TestTranscriptScrubbed(t *testing.T) {
	const (
		literal   = "LITERALsecret2222"
		command   = "CMDsecret3333"
		inherited = "ghp_INHERITEDsecret1111"
		header    = "HDRsecret4444abc"
	)
	t.Setenv("GITHUB_TOKEN", inherited)
	resolver := resolverFunc(func(_ context.Context, v string) (string, error) {
		if c, ok := strings.CutPrefix(v, "!echo "); ok {
			return c, nil
		}
		return v, nil
	})
	e := newEnv(t, &Options{Resolver: resolver})
	ctx := testCtx(t)
	leaky := stdio(t, "leaky", "only=echo", "echo-env=API_KEY,CMD_TOKEN,GITHUB_TOKEN")
	leaky.Env = map[string]string{"API_KEY": literal, "CMD_TOKEN": "!echo " + command}
	leaky.Record = events.RecordTranscript
	quiet := stdio(t, "quiet", "only=echo")

	h, err := fixture.NewHTTPHandler(nil, "only=echo")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	remote := events.ServerConfig{Name: "remote", Type: "http", URL: srv.URL + h.Path(), Headers: map[string]string{"X-Key": header}, Record: events.RecordTranscript}

	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{leaky, quiet, remote}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res, err)
	}
	for _, tl := range e.m.Tools() {
		// Each server is sent its own secret, which it says back.
		secret := map[string]string{"leaky": literal, "quiet": "plain", "remote": header}[tl.Server]
		if _, err := tl.Call(ctx, map[string]any{"text": "hi " + secret}); err != nil {
			t.Errorf("call %s: %v", tl.Name, err)
		}
	}
	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
	lines := transcriptOf(t, e)
	for _, server := range []string{"leaky", "remote"} {
		got := strings.Join(methods(lines, server), ", ")
		for _, want := range []string{"out initialize", "in result", "out notifications/initialized", "out tools/list", "out tools/call"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: transcript %s lacks %q", server, got, want)
			}
		}
	}
	if got := methods(lines, "quiet"); len(got) != 0 {
		t.Errorf("quiet server without record: transcript %v", got)
	}
	for _, l := range lines {
		for _, secret := range []string{literal, command, inherited, header} {
			if strings.Contains(l.Message, secret) {
				t.Errorf("line %d of %s holds a secret: %s", l.Seq, l.Server, l.Message)
			}
		}
	}
	// The secrets reached the server and came back, scrubbed.
	if all := func() string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(l.Message)
		}
		return b.String()
	}(); !strings.Contains(all, events.Redacted) {
		t.Error("no scrubbed value in the transcript")
	}
}

// blockedTranscripts is a transcript store whose appends wait for
// release.
type blockedTranscripts struct {
	release chan struct{}
	store.TranscriptStore
}

func (b *blockedTranscripts) AppendTranscript(ctx context.Context, lines []store.TranscriptLine) error {
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.TranscriptStore.AppendTranscript(ctx, lines)
}

// A message longer than the per-message cap is kept cut, with the count
// of bytes left out; past the per-session cap messages are dropped, and
// counted on the transcript's closing line.
func TestTranscriptCaps(t *testing.T) {
	defer func(m int, s int64) { messageCap, sessionCap = m, s }(messageCap, sessionCap)
	messageCap, sessionCap = 100, 250
	st := memory.New()
	rec := &transcriptRec{session: "s", server: "srv", w: acquireWriter(st)}
	big := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("é", 100) + `"}}` // 246 bytes
	rec.raw(store.TranscriptIn, []byte(big))
	rec.raw(store.TranscriptOut, []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)) // 40
	rec.raw(store.TranscriptOut, []byte(big))                                        // cut to 100: 240 kept
	rec.raw(store.TranscriptOut, []byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)) // over the session cap
	rec.end()
	lines, err := st.ReadTranscript(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 4 {
		t.Fatalf("lines %+v", lines)
	}
	if l := lines[0]; len(l.Message) > 100 || l.Cut != int64(len(big)-len(l.Message)) || !utf8.ValidString(l.Message) {
		t.Errorf("first line: %d bytes kept, cut %d, valid UTF-8 %v", len(l.Message), l.Cut, utf8.ValidString(l.Message))
	}
	if l := lines[3]; l.Direction != store.TranscriptCut || l.Dropped != 1 || l.DroppedBytes != 40 {
		t.Errorf("closing line %+v, want 1 message of 40 bytes dropped", l)
	}
}

// A store that does not answer never holds a message up: lines past the
// queue (and the batch the writer holds) are dropped and counted, and what was queued is written once the
// store answers again.
func TestTranscriptNeverBlocks(t *testing.T) {
	st := &blockedTranscripts{release: make(chan struct{}), TranscriptStore: memory.New()}
	rec := &transcriptRec{session: "s", server: "srv", w: acquireWriter(st)}
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`)
	const n = transcriptQueue + 500
	for range n { // returns although nothing can be written
		rec.raw(store.TranscriptIn, msg)
	}
	close(st.release)
	rec.end()
	lines, err := st.ReadTranscript(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	last := lines[len(lines)-1]
	if last.Direction != store.TranscriptCut || int(last.Dropped)+len(lines)-1 != n || last.Dropped < 500-transcriptBatch {
		t.Errorf("%d lines kept, closing line %+v; want %d messages in all, at least %d dropped", len(lines)-1, last, n, 500-transcriptBatch)
	}
}
