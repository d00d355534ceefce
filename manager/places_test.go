package manager

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
)

// A stdio server whose working directory is missing fails with a message
// saying so, not as the command itself not being found; an http server
// whose URL (known only once its references are expanded) is not an
// http(s) URL fails naming the URL, its substituted parts scrubbed.
func TestConnectNamesAMissingCwdAndABadURL(t *testing.T) {
	e := newEnv(t, &Options{Resolver: expandOnly{"BASE": "example.com"}})
	missing := filepath.Join(t.TempDir(), "gone")
	cfg := stdio(t, "nodir")
	cfg.Cwd = missing
	res, err := e.m.ConnectServers(testCtx(t), []events.ServerConfig{cfg, {Name: "noscheme", Type: "http", URL: "${BASE}/mcp"}, {Name: "ftp", Type: "sse", URL: "ftp://example.com/sse"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Errors["nodir"].Error()
	if !strings.Contains(got, `MCP server "nodir"`) || !strings.Contains(got, "working directory "+missing+" does not exist") || strings.Contains(got, "fork/exec") {
		t.Errorf("nodir: %s", got)
	}
	if got := res.Errors["noscheme"].Error(); !strings.Contains(got, `MCP server "noscheme"`) || !strings.Contains(got, `"url" "<redacted>/mcp" must start with http:// or https://`) {
		t.Errorf("noscheme: %s", got)
	}
	if got := res.Errors["ftp"].Error(); !strings.Contains(got, `Server "ftp"`) || !strings.Contains(got, "must start with http:// or https://") {
		t.Errorf("ftp: %s", got)
	}
}

// expandOnly is a resolver whose Expand replaces ${NAME} by a fixed value.
type expandOnly map[string]string

func (expandOnly) Resolve(_ context.Context, v string) (string, error) { return v, nil }

func (x expandOnly) Expand(v string) (string, []string) {
	var subst []string
	for k, val := range x {
		if strings.Contains(v, "${"+k+"}") {
			v = strings.ReplaceAll(v, "${"+k+"}", val)
			subst = append(subst, val)
		}
	}
	return v, subst
}
