package manager

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrorPrefix starts the text of every result that reports an error raised
// on the client side (CallResult.Err set).
const ErrorPrefix = "MCP error: "

// CallResult is the result of a tool call.
type CallResult struct {
	// Result is the server's result as the go-sdk decoded it, every
	// content kind as the server sent it. When the call failed on the
	// client side (Err set) it is a result with IsError set and one text
	// item: [ErrorPrefix] followed by Err's message, the text an agent
	// sees. A result returned by [Tool.Call] always has a Result.
	Result *mcp.CallToolResult `json:"result"`
	// Truncated: the result's text was over its server's output budget
	// and is cut; its last item is a text marker that says so and names
	// FullOutput, the file holding the whole result ("" when it could not
	// be written; the marker then says why).
	Truncated  bool   `json:"truncated,omitempty"`
	FullOutput string `json:"fullOutput,omitempty"`
	// Err is why the call failed on the client side, nil when the server
	// answered (a tool's own failure is Result.IsError with Err nil). It
	// is a [*ServerError] that matches, with [errors.Is], ErrNotConnected
	// (no connection and none coming), ErrDisconnected (the server went
	// away during the call), ErrTimeout (the connect or the call's own
	// timeout), or the transport's error. Its message never holds a
	// resolved secret. It is not encoded: the result's text carries it.
	Err error `json:"-"`
}

// Text returns the text items of r's result joined by blank lines.
func (r *CallResult) Text() string {
	if r == nil || r.Result == nil {
		return ""
	}
	var parts []string
	for _, c := range r.Result.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// errorResult returns the result of a call that failed before or outside
// the tool: err, and one text item starting with [ErrorPrefix].
func errorResult(err error) *CallResult {
	return &CallResult{
		Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ErrorPrefix + err.Error()}}, IsError: true},
		Err:    err,
	}
}
