package toolsearch_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/toolsearch"
)

func Example() {
	def := func(name, desc, schema string) events.ToolDef {
		return events.ToolDef{Name: name, Description: desc, InputSchema: json.RawMessage(schema)}
	}
	tools := []projector.Tool{
		{Server: "github", Original: "create_pull_request", Def: def("create_pull_request",
			"Create a new pull request in a GitHub repository.",
			`{"type":"object","properties":{"head":{"type":"string","description":"Branch containing changes"},"base":{"type":"string","description":"Branch to merge into"}}}`)},
		{Server: "github", Original: "list_branches", Def: def("list_branches",
			"List branches in a GitHub repository.", `{"type":"object"}`)},
		{Server: "slack", Original: "slack_post_message", Def: def("slack_post_message",
			"Post a new message to a Slack channel.",
			`{"type":"object","properties":{"channel_id":{"type":"string"},"text":{"type":"string"}}}`)},
	}
	for i, t := range tools {
		tools[i].Name = projector.ToolName(t.Server, t.Original)
	}

	x := toolsearch.New()
	x.Sync(tools) // or SetServer per server, as tool lists change

	for _, r := range x.Search("open a PR for my branch", toolsearch.SearchOptions{Limit: 2}) {
		fmt.Println(r.Tool.Name)
	}
	for _, r := range x.Search("send a message to the team", toolsearch.SearchOptions{Server: "slack"}) {
		fmt.Println(r.Tool.Name, toolsearch.EstimateTokens(r.Tool.Def) > 0)
	}
	// Output:
	// mcp_github_create_pull_request
	// mcp_github_list_branches
	// mcp_slack_post_message true
}
