package manager

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

// TestStderrExcerptNeverQuotesPartOfASecret: a server prints its
// configured API key to stderr, then padding of a length that puts the
// excerpt's cut inside the key, then fails (at connect, by timing out, or
// by exiting after the handshake). No fragment of the key is in the error
// returned, in the recorded ConnectFailed or Disconnected, whatever the
// cut.
func TestStderrExcerptNeverQuotesPartOfASecret(t *testing.T) {
	const key = "sk-live-0123456789abcdefghijABCDEFGHIJ0123456789"
	cases := []struct {
		name      string
		behaviour []string
		exitLine  string // the fixture's last stderr line ("" when it writes none)
		timeout   *int64
		drop      bool
	}{
		{name: "connect", behaviour: []string{"exit-on-init"}, exitLine: "mcplife fixture: exit 1 (exit-on-init)"},
		{name: "timeout", behaviour: []string{"hang-init"}, timeout: ms(500)},
		{name: "drop", behaviour: []string{"exit-after-init"}, exitLine: "mcplife fixture: exit 1 (exit-after-init)", drop: true},
	}
	for _, c := range cases {
		for _, kept := range []int{5, 23, 40} { // bytes of the key a cut before scrubbing would keep
			t.Run(fmt.Sprintf("%s/%d", c.name, kept), func(t *testing.T) {
				extra := 0
				if c.exitLine != "" {
					extra = 1 + len(c.exitLine)
				}
				pad := errStderrLimit - kept - 1 - extra
				e := newEnv(t, noReconnect)
				ctx := testCtx(t)
				args := append([]string{"only=echo", "stderr=my key is " + key, "stderr=" + strings.Repeat("p", pad)}, c.behaviour...)
				cfg := stdio(t, "leaky", args...)
				cfg.Env = map[string]string{"API_KEY": key}
				cfg.TimeoutMs = c.timeout
				var updates <-chan Update
				if c.drop {
					var err error
					if updates, err = e.m.Watch(ctx); err != nil {
						t.Fatal(err)
					}
				}
				res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil)
				if err != nil {
					t.Fatal(err)
				}
				var texts []string
				if c.drop {
					waitFor(t, ctx, updates, func() bool { return e.m.Status("leaky") == projector.StatusDisconnected })
					for _, d := range ofType[*events.Disconnected](e, "s1") {
						texts = append(texts, d.Error)
					}
				} else {
					if res.Errors["leaky"] == nil {
						t.Fatalf("connect did not fail: %+v", res)
					}
					texts = append(texts, res.Errors["leaky"].Error())
					for _, f := range ofType[*events.ConnectFailed](e, "s1") {
						texts = append(texts, f.Error)
					}
				}
				if len(texts) < 1 || !strings.Contains(texts[len(texts)-1], "stderr: ") {
					t.Fatalf("no stderr excerpt in %q", texts)
				}
				for _, text := range texts {
					for i := 0; i+8 <= len(key); i++ {
						if strings.Contains(text, key[i:i+8]) {
							t.Fatalf("the error quotes %q of the key: …%s", key[i:i+8], text[max(0, strings.Index(text, key[i:i+8])-20):])
						}
					}
				}
			})
		}
	}
}
