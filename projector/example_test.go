package projector_test

import (
	"fmt"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

func ExampleToolName() {
	fmt.Println(projector.ToolName("GitHub", "create_issue"))
	fmt.Println(projector.ToolName("puppeteer", "puppeteer_screenshot"))
	fmt.Println(projector.ToolName("my server", "Read File"))
	// Output:
	// mcp_github_create_issue
	// mcp_puppeteer_screenshot
	// mcp_my_server_read_file
}

func ExampleAssignNames() {
	names, collisions := projector.AssignNames([]projector.ToolRef{
		{Server: "a-b", Tool: "c"},
		{Server: "a", Tool: "b_c"},
	})
	fmt.Println(names[projector.ToolRef{Server: "a", Tool: "b_c"}])
	for _, c := range collisions {
		fmt.Printf("%s: %s/%s kept it, %s/%s became %s\n", c.Name, c.Kept.Server, c.Kept.Tool, c.Ref.Server, c.Ref.Tool, c.Assigned)
	}
	// Output:
	// mcp_a_b_c
	// mcp_a_b_c: a/b_c kept it, a-b/c became mcp_a_b_c_695274f6
}

func ExampleToolView() {
	t := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var seq uint64
	record := func(ev events.Event) events.Envelope {
		seq++
		env := events.MustNew("s1", ev, t)
		env.Seq = seq
		return env
	}

	view := projector.NewToolView("s1")
	for _, env := range []events.Envelope{
		record(&events.ConnectStarted{Server: "git", Transport: events.TransportStdio, Attempt: 1}),
		record(&events.ConnectStarted{Server: "web", Transport: events.TransportHTTP, Attempt: 1}),
		record(&events.ServerConnected{Server: "git"}),
		record(&events.ToolsListed{Server: "git", Tools: []events.ToolDef{{Name: "status"}, {Name: "git_log"}}}),
		record(&events.CachedToolsServed{Server: "web", Tools: []events.ToolDef{{Name: "fetch"}}, CacheAge: time.Hour}),
	} {
		view.Apply(env)
	}
	for _, s := range view.Servers() {
		fmt.Println(s.Name, s.Status)
	}
	for _, tool := range view.Tools() {
		fmt.Println(tool.Name, tool.Server, tool.Original, tool.Deferred)
	}
	// Output:
	// git connected
	// web connecting
	// mcp_git_log git git_log false
	// mcp_git_status git status false
	// mcp_web_fetch web fetch true
}
