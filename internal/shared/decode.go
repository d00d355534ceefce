package shared

import (
	"bytes"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcplife/mcplife/internal/proc"
)

// decodeMessage decodes one JSON-RPC message as [jsonrpc.DecodeMessage]
// does. The go-sdk's decoder allocates and clears a 32 KiB buffer for
// each value it decodes, twice for a request: on the shared host's path
// of every call, that garbage was most of the collector's work. The
// common shapes (a request or notification with a plain method and
// object params, a response with a result; the id a plain string or an
// integer) are decoded here instead, in one pass over the line, by the
// check a stdio server's lines get ([proc.ScanMessage]); anything else
// (an error response, an unusual id, an escape in a name) goes to the
// go-sdk's decoder, which also words the errors. The message does not
// keep line.
func decodeMessage(line []byte) (jsonrpc.Message, error) {
	if m, ok := decodeCommon(line); ok {
		return m, nil
	}
	// The go-sdk's decoder may keep parts of what it decoded.
	return jsonrpc.DecodeMessage(bytes.Clone(line))
}

// decodeCommon decodes line when it has one of the common shapes.
func decodeCommon(line []byte) (jsonrpc.Message, bool) {
	m, ok := proc.ScanMessage(line)
	if !ok || m.Escaped || m.Error != nil {
		return nil, false
	}
	id, ok := plainID(m.ID)
	if !ok {
		return nil, false
	}
	if m.Method != nil {
		method, ok := proc.PlainString(m.Method)
		if !ok || (m.Params != nil && m.Params[0] != '{') {
			return nil, false // arrays, null: left to the go-sdk
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: bytes.Clone(m.Params)}, true
	}
	if m.Result == nil || string(m.Result) == "null" {
		return nil, false
	}
	return &jsonrpc.Response{ID: id, Result: bytes.Clone(m.Result)}, true
}

// plainID returns the id a raw value stands for: none when absent, a
// string without escapes, or an integer that a float64 holds exactly (the
// go-sdk decodes ids as float64).
func plainID(raw []byte) (jsonrpc.ID, bool) {
	if raw == nil {
		return jsonrpc.ID{}, true
	}
	if s, ok := proc.PlainString(raw); ok {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	return id, err == nil
}
