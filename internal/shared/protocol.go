package shared

import (
	"encoding/json"

	"github.com/mcplife/mcplife/events"
)

// Paths of the shared host's HTTP API on its socket.
const (
	// PathHosts is the control stream: a host POSTs its [Hello] and
	// holds the response open; the first line of the response is its
	// [Welcome]. The end of that request, from either side, detaches
	// every server of the host.
	PathHosts = "/v1/hosts"
	// PathAttach (under /v1/hosts/{host}) attaches one server. A DELETE
	// of the instance's MCP session, which a client closing it sends,
	// releases it.
	PathAttach = "/attach"
	// HostHeader carries the host id on each request of a host, so the
	// shared host cancels the host's calls when its control stream ends.
	HostHeader = "Mcplife-Host"
	// StreamProtocol is the Upgrade token of an instance's stream: a POST
	// to [Stream] answered 101 becomes one bidirectional byte stream of
	// newline-delimited JSON-RPC, an MCP session of the instance whose end
	// detaches it.
	StreamProtocol = "mcplife-jsonrpc"
	// RevisionHeader carries, on a stream's upgrade, the [Answers.Revision]
	// of the attach answer the host answers its first requests from, so the
	// shared host tells the stream of every change of the instance's tools
	// since then.
	RevisionHeader = "Mcplife-Tools-Revision"
	// AnswersProtocol is the protocol version of [Answers]: a host answers
	// from them only the requests it sends at this version.
	AnswersProtocol = "2026-07-28"
)

// Hello opens a control stream: who the host is.
type Hello struct {
	Session string `json:"session"`
	Pid     int    `json:"pid"`
}

// Welcome is the first line of the control stream's response.
type Welcome struct {
	Host string `json:"host"`
	// Session is the shared host's own session id, where the servers'
	// lifecycle is recorded.
	Session string `json:"session"`
	Pid     int    `json:"pid"`
}

// Attach asks for a shared instance of one stdio server. It travels over
// the socket only: its resolved values are never stored or logged by
// either side.
type Attach struct {
	// Name is the server's name in the host's config; the instance is
	// named after it.
	Name string `json:"name"`
	// Config is the server's configuration as the host has it (env and
	// header values unresolved), which the instance key hashes.
	Config events.ServerConfig `json:"config"`
	// Command, Args and Cwd are what the host would launch: expanded,
	// Cwd absolute.
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Cwd     string   `json:"cwd"`
	// Env holds the resolved env values.
	Env map[string]string `json:"env,omitempty"`
	// Roots are the absolute directories roots/list is to answer with.
	Roots []string `json:"roots,omitempty"`
}

// Attached answers an [Attach].
type Attached struct {
	// Instance names the server process; hosts given the same instance
	// share it.
	Instance string `json:"instance"`
	// Endpoint is the path of the instance's MCP endpoint (streamable
	// HTTP) on the socket.
	Endpoint string `json:"endpoint"`
	// Answers, when set, are what the instance answers a host's
	// server/discover and first tools/list: a host answers those from
	// here instead of asking over its stream.
	Answers *Answers `json:"answers,omitempty"`
}

// Answers are the results an instance's relay gives to server/discover
// and to a tools/list without a cursor, both at [AnswersProtocol], as of
// one revision of its tools.
type Answers struct {
	Discover json.RawMessage `json:"discover"`
	Tools    json.RawMessage `json:"tools"`
	// Revision counts the changes of the instance's tools; a stream
	// opened with it in [RevisionHeader] is told of every later change,
	// including those made before it opened.
	Revision uint64 `json:"revision"`
}

// Failure is the body of an answer other than 200.
type Failure struct {
	Error string `json:"error"`
}

// Endpoint returns the MCP endpoint path of instance.
func Endpoint(instance string) string { return "/v1/s/" + instance + "/mcp" }

// Stream returns the path of instance's stream endpoint.
func Stream(instance string) string { return "/v1/s/" + instance + "/stream" }
