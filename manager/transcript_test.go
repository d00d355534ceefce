package manager

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/store"
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
	resolver := ResolverFunc(func(_ context.Context, v string) (string, error) {
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
