package manager

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// Resources and prompts against the fixture server as a real process (and
// over streamable HTTP): pagination, list changes and updates of
// subscribed resources.

// fixtureResources returns the resources a fixture with resources=n lists.
func fixtureResources(n int) []events.ResourceDef {
	var out []events.ResourceDef
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("resource_%0*d", len(fmt.Sprint(n)), i)
		out = append(out, events.ResourceDef{URI: fixture.ResourceURI(i, n), Name: name, Description: "Fixture resource " + name + ".", MIMEType: "text/plain"})
	}
	return out
}

// fixturePrompt returns the prompt called name as a fixture lists it.
func fixturePrompt(name string) events.PromptDef {
	return events.PromptDef{Name: name, Description: "Fixture prompt " + name + ".",
		Arguments: []events.PromptArgument{{Name: "topic", Description: "What to write about; completes from CompletionValues.", Required: true}}}
}

// surfaceNames returns the URIs of the resources and the names of the
// prompts of server in the manager's view.
func surfaceNames(m *Manager, server string) (uris, prompts []string) {
	st, _ := m.View().Server(server)
	for _, r := range st.Resources {
		uris = append(uris, r.URI)
	}
	for _, p := range st.Prompts {
		prompts = append(prompts, p.Name)
	}
	return uris, prompts
}

// TestSurfaceListsEveryPage: a server that lists resources, templates and
// prompts in pages of two has every page recorded, once, in one
// ResourcesListed and one PromptsListed whose counts and hashes are those
// of the whole lists; the view holds them all.
func TestSurfaceListsEveryPage(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stdio(t, "paged", "only=echo", "resources=7", "resource-templates=3", "prompts=5", "page-size=2")
	if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(res, err)
	}
	waitFor(t, ctx, updates, func() bool {
		uris, prompts := surfaceNames(e.m, "paged")
		return len(uris) == 7 && len(prompts) == 5
	})

	wantResources := fixtureResources(7)
	var wantTemplates []events.ResourceTemplateDef
	for i := 1; i <= 3; i++ {
		wantTemplates = append(wantTemplates, events.ResourceTemplateDef{URITemplate: fixture.TemplateURI(i, 3), Name: fmt.Sprintf("template_%d", i),
			Description: "Fixture items by id; the id completes from CompletionValues.", MIMEType: "text/plain"})
	}
	var wantPrompts []events.PromptDef
	for i := 1; i <= 5; i++ {
		wantPrompts = append(wantPrompts, fixturePrompt(fixture.PromptName(i, 5)))
	}

	rl := ofType[*events.ResourcesListed](e, "s1")
	if len(rl) != 1 {
		t.Fatalf("%d ResourcesListed, want 1: %+v", len(rl), rl)
	}
	if diff := cmp.Diff(wantResources, rl[0].Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantTemplates, rl[0].Templates); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
	if rl[0].Count != 7 || rl[0].Cause != events.CauseInitial || rl[0].ConfigHash != cfg.Hash() {
		t.Errorf("ResourcesListed count %d cause %s config %s", rl[0].Count, rl[0].Cause, rl[0].ConfigHash)
	}
	if want := events.HashList([]any{wantResources, wantTemplates}); rl[0].Hash != want {
		t.Errorf("resources hash %s, want %s (of all pages)", rl[0].Hash, want)
	}

	pl := ofType[*events.PromptsListed](e, "s1")
	if len(pl) != 1 {
		t.Fatalf("%d PromptsListed, want 1: %+v", len(pl), pl)
	}
	if diff := cmp.Diff(wantPrompts, pl[0].Prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	if pl[0].Count != 5 || pl[0].Cause != events.CauseInitial || pl[0].Hash != events.HashList(wantPrompts) {
		t.Errorf("PromptsListed count %d cause %s hash %s", pl[0].Count, pl[0].Cause, pl[0].Hash)
	}

	st, _ := e.m.View().Server("paged")
	if !cmp.Equal(st.Resources, wantResources) || !cmp.Equal(st.Templates, wantTemplates) || !cmp.Equal(st.Prompts, wantPrompts) {
		t.Errorf("view: %d resources, %d templates, %d prompts; want the listed ones", len(st.Resources), len(st.Templates), len(st.Prompts))
	}
	checkReplay(t, e)
}

// surfaceServers are the two ways a test runs a fixture with the given
// behaviours: a stdio child process and streamable HTTP, where the
// server's notifications travel on a stream of their own.
var surfaceServers = []struct {
	name string
	cfg  func(t *testing.T, name string, behaviours ...string) events.ServerConfig
}{
	{"stdio", stdio},
	{"http", func(t *testing.T, name string, behaviours ...string) events.ServerConfig {
		return events.ServerConfig{Name: name, Type: events.TransportHTTP, URL: fixturetest.ServeHTTP(t, behaviours...)}
	}},
}

// TestSurfaceListChanged: a server that adds a resource and a prompt
// (notifications/resources/list_changed, prompts/list_changed) has each
// list listed again with cause list-changed, and the new item is in the
// session's view and can be read and got.
func TestSurfaceListChanged(t *testing.T) {
	for _, srv := range surfaceServers {
		t.Run(srv.name, func(t *testing.T) {
			// The server is started first so that it stops after the
			// manager (cleanups run last first).
			resources, prompts := fixturetest.NewGate(t), fixturetest.NewGate(t)
			cfg := srv.cfg(t, "lib", "only=echo", "resources=2", "prompts=1",
				resources.Arg("change-resources-on-release"), prompts.Arg("change-prompts-on-release"))
			e := newEnv(t, nil)
			ctx := testCtx(t)
			updates, err := e.m.Watch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
				t.Fatal(res, err)
			}
			waitFor(t, ctx, updates, func() bool {
				uris, prompts := surfaceNames(e.m, "lib")
				return len(uris) == 2 && len(prompts) == 1
			})

			resources.Release()
			waitFor(t, ctx, updates, func() bool {
				uris, _ := surfaceNames(e.m, "lib")
				return slices.Contains(uris, fixture.AddedResourceURI)
			})
			prompts.Release()
			waitFor(t, ctx, updates, func() bool {
				_, names := surfaceNames(e.m, "lib")
				return slices.Contains(names, fixture.AddedName)
			})

			uris, names := surfaceNames(e.m, "lib")
			if want := []string{"fixture://r/1", "fixture://r/2", fixture.AddedResourceURI}; !slices.Equal(uris, want) {
				t.Errorf("resources in the view %q, want %q", uris, want)
			}
			if want := []string{fixture.AddedName, "prompt_1"}; !slices.Equal(names, want) {
				t.Errorf("prompts in the view %q, want %q", names, want)
			}
			rl := ofType[*events.ResourcesListed](e, "s1")
			if len(rl) != 2 || rl[0].Cause != events.CauseInitial || rl[1].Cause != events.CauseListChanged || rl[1].Count != 3 || rl[1].Hash == rl[0].Hash {
				t.Errorf("ResourcesListed %+v; want the initial list, then the changed one", rl)
			}
			pl := ofType[*events.PromptsListed](e, "s1")
			if len(pl) != 2 || pl[1].Cause != events.CauseListChanged || pl[1].Count != 2 ||
				!cmp.Equal(pl[1].Prompts, []events.PromptDef{fixturePrompt(fixture.AddedName), fixturePrompt("prompt_1")}) {
				t.Errorf("PromptsListed %+v; want the initial list, then the changed one", pl)
			}

			read, err := e.m.ReadResource(ctx, "lib", fixture.AddedResourceURI)
			if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != fixture.ResourceText(fixture.AddedResourceURI, 1) {
				t.Errorf("read of the new resource: %+v %v", read, err)
			}
			got, err := e.m.GetPrompt(ctx, "lib", fixture.AddedName, map[string]string{"topic": "banana"})
			if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != fixture.PromptText(fixture.AddedName, "banana") {
				t.Errorf("get of the new prompt: %+v %v", got, err)
			}
			comp, err := e.m.Complete(ctx, "lib", &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: fixture.AddedName},
				Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "ap"}})
			if err != nil || !slices.Equal(comp.Completion.Values, []string{"apple", "apricot"}) {
				t.Errorf("completion: %+v %v", comp, err)
			}
			checkReplay(t, e)
		})
	}
}

// TestSurfaceResourceUpdated: when a subscribed resource changes, the
// server's notifications/resources/updated reaches Options.OnResourceUpdated
// and is recorded as ResourceUpdated; a resource unsubscribed from is
// neither reported nor recorded, and a read shows the new contents.
func TestSurfaceResourceUpdated(t *testing.T) {
	for _, srv := range surfaceServers {
		t.Run(srv.name, func(t *testing.T) {
			update := fixturetest.NewGate(t)
			cfg := srv.cfg(t, "lib", "only=echo", "resources=3", update.Arg("update-resource-on-release"))
			reported := make(chan string, 10)
			e := newEnv(t, &Options{OnResourceUpdated: func(server, uri string) { reported <- server + " " + uri }})
			ctx := testCtx(t)
			if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
				t.Fatal(res, err)
			}
			for _, uri := range []string{"fixture://r/1", "fixture://r/2", "fixture://r/3"} {
				if err := e.m.SubscribeResource(ctx, "lib", uri); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.m.UnsubscribeResource(ctx, "lib", "fixture://r/2"); err != nil {
				t.Fatal(err)
			}
			update.Release()
			var got []string
			for len(got) < 2 {
				select {
				case r := <-reported:
					got = append(got, r)
				case <-ctx.Done():
					t.Fatalf("reported %q, then nothing: %v", got, ctx.Err())
				}
			}
			// The fixture sends its updates in URI order: had the
			// unsubscribe not reached it, r/2 would be among these two.
			if want := []string{"lib fixture://r/1", "lib fixture://r/3"}; !slices.Equal(got, want) {
				t.Errorf("OnResourceUpdated %q, want %q", got, want)
			}
			read, err := e.m.ReadResource(ctx, "lib", "fixture://r/1")
			if err != nil || read.Contents[0].Text != fixture.ResourceText("fixture://r/1", 2) {
				t.Errorf("read after the update: %+v %v", read, err)
			}
			var recorded []string
			for _, ev := range ofType[*events.ResourceUpdated](e, "s1") {
				recorded = append(recorded, ev.Server+" "+ev.URI)
			}
			if want := []string{"lib fixture://r/1", "lib fixture://r/3"}; !slices.Equal(recorded, want) {
				t.Errorf("ResourceUpdated events %q, want %q", recorded, want)
			}
		})
	}
}
