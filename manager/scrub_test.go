package manager

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
)

// Secrets a server says back in what it tells about itself (its
// instructions and version, a tool's name, title, description and schema,
// a resource's URI and name, a template, a prompt) are not in any stored
// event: a configured env value, a value a !command resolved to, and an
// inherited credential-named variable. The tool, the resource and the
// prompt stay usable under their recorded names.
func TestServerSuppliedTextsScrubbed(t *testing.T) {
	const (
		literal   = "LITERALsecret2222"
		command   = "CMDsecret3333"
		inherited = "ghp_INHERITEDsecret1111"
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
	cfg := stdio(t, "leaky", "only=echo", "echo-env=API_KEY,CMD_TOKEN,GITHUB_TOKEN")
	cfg.Env = map[string]string{"API_KEY": literal, "CMD_TOKEN": "!echo " + command}
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res, err)
	}
	waitFor(t, ctx, updates, func() bool {
		st, _ := e.m.View().Server("leaky")
		return len(st.Resources) > 0 && len(st.Prompts) > 0
	})

	// The scrubbed names still reach the server's own.
	var leak *Tool
	for _, tl := range e.m.Tools() {
		if strings.HasPrefix(tl.Original, fixture.EchoEnvTool) {
			leak = tl
		}
	}
	if leak == nil || leak.Original != fixture.EchoEnvTool+"_"+events.Redacted {
		t.Fatalf("tools %v", toolNames(e.m.Tools()))
	}
	r, err := leak.Call(ctx, nil)
	if err != nil || r.Result.IsError || r.Text() != "called "+fixture.EchoEnvTool+"_"+literal {
		t.Fatalf("call of %s: %+v %v", leak.Original, r, err)
	}
	if !json.Valid(leak.InputSchema) || !strings.Contains(string(leak.InputSchema), `"default":"`+events.Redacted+`"`) {
		t.Errorf("input schema %s", leak.InputSchema)
	}
	st, _ := e.m.View().Server("leaky")
	if len(st.Resources) != 1 || len(st.Prompts) != 1 || len(st.Templates) != 1 {
		t.Fatalf("resources %+v prompts %+v templates %+v", st.Resources, st.Prompts, st.Templates)
	}
	if _, err := e.m.ReadResource(ctx, "leaky", st.Resources[0].URI); err != nil {
		t.Errorf("read %s: %v", st.Resources[0].URI, err)
	}
	if err := e.m.SubscribeResource(ctx, "leaky", st.Resources[0].URI); err != nil {
		t.Errorf("subscribe %s: %v", st.Resources[0].URI, err)
	}
	if _, err := e.m.GetPrompt(ctx, "leaky", st.Prompts[0].Name, map[string]string{"topic": "x"}); err != nil {
		t.Errorf("get prompt %s: %v", st.Prompts[0].Name, err)
	}
	if s := e.m.Instructions("leaky"); !strings.Contains(s, "env "+events.Redacted) {
		t.Errorf("instructions %q", s)
	}

	seen := map[string]bool{}
	for _, env := range e.events("s1") {
		seen[env.Type] = true
		for _, secret := range []string{literal, command, inherited} {
			if strings.Contains(string(env.Data), secret) {
				t.Errorf("%s holds %s: %s", env.Type, secret, env.Data)
			}
		}
	}
	for _, typ := range []string{events.TypeServerConnected, events.TypeToolsListed, events.TypeResourcesListed, events.TypePromptsListed} {
		if !seen[typ] {
			t.Errorf("no %s recorded", typ)
		}
	}
}
