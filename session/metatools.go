package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager"
)

// ToolMode says how a session offers its MCP tools to the model.
type ToolMode string

const (
	// ToolsDirect (the default) offers every exposed MCP tool as a tool of
	// its own, in the order of [ExposedTools].
	ToolsDirect ToolMode = ""
	// ToolsCallTool offers two tools whose definitions never change,
	// whatever servers connect, drop or change their lists:
	// [ListToolsName], which lists the session's MCP tools with their
	// input schemas, and [CallToolName], which calls one of them by name
	// with its arguments. It suits hosts that want a tool list that never
	// changes (so a provider's prompt cache keeps it whole), at the cost
	// of a list call before the first use and a level of nesting in every
	// call's arguments. The calls are recorded as calls of the tools
	// called, as any other. It cannot be combined with a tool budget,
	// whose search tool is the other way to keep the list short.
	ToolsCallTool ToolMode = "call_tool"
)

// Names of the tools of [ToolsCallTool]. Like [SearchToolName] they start
// with "mcp__", which no MCP tool name can.
const (
	ListToolsName = "mcp__list_tools"
	CallToolName  = "mcp__call_tool"
)

// ToolModeOption is the key of SessionStarted's options that records
// [Options.ToolMode], when set.
const ToolModeOption = "toolMode"

var listToolsDef = events.ToolDef{
	Name: ListToolsName,
	Description: "List the tools of this session's MCP servers: each tool's name, server, description and input schema. " +
		"Call one with " + CallToolName + ". Optionally name one server to list only its tools.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"server":{"type":"string","description":"Only list the tools of this MCP server"}}}`),
}

var callToolDef = events.ToolDef{
	Name: CallToolName,
	Description: "Call a tool of this session's MCP servers by its name (as " + ListToolsName + " lists it), " +
		"with the arguments its input schema describes. Returns the tool's result.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","description":"The tool's name, as ` + ListToolsName + ` lists it"},` +
		`"arguments":{"type":"object","description":"The tool's arguments"}},` +
		`"required":["name"]}`),
}

// metaTools returns the two tools of ToolsCallTool, made once. Requires
// s.mu.
func (s *Session) metaTools() []Tool {
	if s.meta == nil {
		s.meta = []Tool{
			{Name: ListToolsName, Description: listToolsDef.Description, InputSchema: listToolsDef.InputSchema,
				Path: "mcplife tool list", Call: s.listTools},
			{Name: CallToolName, Description: callToolDef.Description, InputSchema: callToolDef.InputSchema,
				Path: "mcplife tool call", Call: s.callTool},
		}
	}
	return s.meta
}

// listedTool is one entry of the list tool's result.
type listedTool struct {
	Name        string          `json:"name"`
	Server      string          `json:"server"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Deferred: served from the cache while the server connects; a call
	// waits for it.
	Deferred bool `json:"deferred,omitempty"`
}

// listTools runs the list tool: the session's MCP tools in the order of
// [Session.Tools] without the mode, optionally of one server.
func (s *Session) listTools(_ context.Context, args json.RawMessage) (*manager.CallResult, error) {
	var in struct {
		Server string `json:"server"`
	}
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return metaError(ListToolsName, "arguments must be an object {server?}: "+err.Error()), nil
		}
	}
	s.mu.Lock()
	tools := s.mcp
	s.mu.Unlock()
	out := struct {
		Tools []listedTool `json:"tools"`
	}{Tools: []listedTool{}}
	for _, t := range tools {
		if t.MCP == nil || (in.Server != "" && t.MCP.Server != in.Server) {
			continue
		}
		out.Tools = append(out.Tools, listedTool{Name: t.Name, Server: t.MCP.Server, Title: t.MCP.Title,
			Description: t.Description, InputSchema: t.InputSchema, Deferred: t.MCP.Deferred})
	}
	text, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("session: list tools: %w", err)
	}
	return textResult(string(text), text), nil
}

// callTool runs the call tool: it calls the named MCP tool with the
// arguments given and returns its result and error as they are. A name
// the session does not hold, or bad arguments, are a result with IsError
// set.
func (s *Session) callTool(ctx context.Context, args json.RawMessage) (*manager.CallResult, error) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Name == "" {
		msg := `arguments must be an object {name, arguments?} naming the tool to call`
		if err != nil {
			msg += ": " + err.Error()
		}
		return metaError(CallToolName, msg), nil
	}
	if a := bytes.TrimSpace(in.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) && a[0] != '{' {
		return metaError(CallToolName, `"arguments" must be an object`), nil
	}
	s.mu.Lock()
	i, ok := s.mcpIndex[in.Name]
	var t Tool
	if ok {
		t = s.mcp[i]
	}
	s.mu.Unlock()
	if !ok || t.MCP == nil {
		hint := ""
		if strings.HasPrefix(in.Name, "mcp__") {
			hint = " (call it directly)"
		}
		return metaError(CallToolName, fmt.Sprintf("no MCP tool %q%s; %s lists the tools", in.Name, hint, ListToolsName)), nil
	}
	return t.Call(ctx, in.Arguments)
}

// textResult is a result of the session's own tools: text, and the same
// JSON as structuredContent.
func textResult(text string, structured json.RawMessage) *manager.CallResult {
	return &manager.CallResult{Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}}
}

// metaError is a result of the session's own tools reporting bad input,
// for the model to correct: a tool's own failure, not a client-side one
// (Err stays nil).
func metaError(tool, msg string) *manager.CallResult {
	return &manager.CallResult{Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tool + ": " + msg}}, IsError: true}}
}
