package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/contract"
	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

const mockUsage = "usage: mcp-audit mock SESSION --server NAME [--http ADDR]"

// runMock serves what a recorded server listed as a real MCP server: on
// stdin and stdout, or over streamable HTTP at --http. With the server's
// transcript it answers a call with the result recorded for the same tool
// and arguments (compared as canonical JSON), and everything else with an
// error saying no recording matches.
func runMock(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("mock", g)
	server := fs.String("server", "", "the recorded server to serve (required)")
	addr := fs.String("http", "", "serve streamable HTTP at this address (host:port) instead of stdio")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *server == "" {
		return usagef(mockUsage)
	}
	st, err := g.openReadOnly()
	if err != nil {
		return err
	}
	session, err := resolveSessionRef(ctx, st, pos[0])
	if err != nil {
		st.Close()
		return err
	}
	rec, err := loadRecording(ctx, st, session, *server)
	st.Close()
	if err != nil {
		return err
	}
	srv := rec.server(g)
	if *addr == "" {
		return srv.Run(ctx, &mcp.StdioTransport{})
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", *addr, err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &http.Server{Handler: h}
	fmt.Fprintf(g.stderr, "mock of %s (session %s) at http://%s/\n", escapeLine(*server), escapeLine(session), ln.Addr())
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// recording is what a session recorded of one server.
type recording struct {
	name      string
	surface   *contract.Surface
	connected *events.ServerConnected
	// calls, reads and prompts map a request's key to its recorded result.
	calls, reads, prompts map[string]json.RawMessage
}

// loadRecording reads the listing and, when the store keeps them, the
// transcript of server in session.
func loadRecording(ctx context.Context, st store.Store, session, server string) (*recording, error) {
	snap := contract.NewSnapshot(session)
	rec := &recording{name: server, calls: map[string]json.RawMessage{}, reads: map[string]json.RawMessage{}, prompts: map[string]json.RawMessage{}}
	for env, err := range st.ReadStream(ctx, session, 1) {
		if err != nil {
			return nil, err
		}
		snap.Apply(env)
		if env.Type == events.TypeServerConnected {
			if ev, err := events.Decode(env); err == nil {
				if c, ok := ev.(*events.ServerConnected); ok && c.Server == server {
					rec.connected = c
				}
			}
		}
	}
	sf, ok := snap.Server(server)
	if !ok {
		return nil, fmt.Errorf("--server %s: session %s recorded no listing of that server", server, session)
	}
	rec.surface = sf
	if ts, ok := st.(store.TranscriptStore); ok {
		lines, err := ts.ReadTranscript(ctx, session)
		if err != nil {
			return nil, err
		}
		rec.learn(lines)
	}
	return rec, nil
}

// learn pairs each recorded request with its answer: by id, within one
// connection (ids start again with each initialize). A later answer of
// the same request wins.
func (r *recording) learn(lines []store.TranscriptLine) {
	type pending struct {
		into map[string]json.RawMessage
		key  string
	}
	open := map[string]pending{}
	for _, l := range lines {
		if l.Server != r.name || l.Cut > 0 {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				URI       string          `json:"uri"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(l.Message), &m) != nil {
			continue
		}
		id := string(m.ID)
		switch l.Direction {
		case store.TranscriptOut:
			switch m.Method {
			case "initialize":
				clear(open)
			case "tools/call":
				open[id] = pending{r.calls, mockKey(m.Params.Name, m.Params.Arguments)}
			case "resources/read":
				open[id] = pending{r.reads, m.Params.URI}
			case "prompts/get":
				open[id] = pending{r.prompts, mockKey(m.Params.Name, m.Params.Arguments)}
			}
		case store.TranscriptIn:
			if p, ok := open[id]; ok && m.Method == "" && m.Result != nil {
				p.into[p.key] = m.Result
				delete(open, id)
			}
		}
	}
}

// mockKey is a request's name with its arguments as canonical JSON (keys
// sorted, no insignificant space; absent and empty arguments alike).
func mockKey(name string, args json.RawMessage) string {
	return name + "\x00" + canonicalJSON(args)
}

func canonicalJSON(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// noRecording is the answer to a request the recording has no match for.
func noRecording(what string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "mcp-audit mock: no recording matches " + what}}}
}

// server builds the MCP server of the recording.
func (r *recording) server(g *globals) *mcp.Server {
	impl := &mcp.Implementation{Name: r.name, Version: "mock"}
	opts := &mcp.ServerOptions{HasTools: r.surface.HasTools && len(r.surface.Tools) > 0}
	if c := r.connected; c != nil {
		if c.PeerName != "" {
			impl.Name = c.PeerName
		}
		if c.PeerVersion != "" {
			impl.Version = c.PeerVersion
		}
		opts.Instructions = c.Instructions
	}
	srv := mcp.NewServer(impl, opts)
	for _, def := range r.surface.Tools {
		if err := r.addTool(srv, def); err != nil {
			fmt.Fprintf(g.stderr, "mock: tool %s left out: %v\n", escapeLine(def.Name), err)
		}
	}
	for _, def := range r.surface.Resources {
		res := &mcp.Resource{URI: def.URI, Name: def.Name, Title: def.Title, Description: def.Description, MIMEType: def.MIMEType, Size: def.Size}
		unmarshalOpt(def.Annotations, &res.Annotations)
		unmarshalOpt(def.Icons, &res.Icons)
		srv.AddResource(res, r.readResource)
	}
	for _, def := range r.surface.Templates {
		tpl := &mcp.ResourceTemplate{URITemplate: def.URITemplate, Name: def.Name, Title: def.Title, Description: def.Description, MIMEType: def.MIMEType}
		unmarshalOpt(def.Annotations, &tpl.Annotations)
		unmarshalOpt(def.Icons, &tpl.Icons)
		srv.AddResourceTemplate(tpl, r.readResource)
	}
	for _, def := range r.surface.Prompts {
		p := &mcp.Prompt{Name: def.Name, Title: def.Title, Description: def.Description}
		for _, a := range def.Arguments {
			p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		unmarshalOpt(def.Icons, &p.Icons)
		srv.AddPrompt(p, r.getPrompt)
	}
	return srv
}

func unmarshalOpt(raw json.RawMessage, v any) {
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, v)
	}
}

func (r *recording) addTool(srv *mcp.Server, def events.ToolDef) (err error) {
	t := &mcp.Tool{Name: def.Name, Title: def.Title, Description: def.Description}
	schema := def.InputSchema
	var obj map[string]any
	if len(schema) == 0 || json.Unmarshal(schema, &obj) != nil || obj["type"] != "object" {
		return fmt.Errorf("its recorded input schema is not a JSON object schema")
	}
	t.InputSchema = schema
	if len(def.OutputSchema) > 0 {
		t.OutputSchema = def.OutputSchema
	}
	unmarshalOpt(def.Annotations, &t.Annotations)
	unmarshalOpt(def.Icons, &t.Icons)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	srv.AddTool(t, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw, ok := r.calls[mockKey(req.Params.Name, req.Params.Arguments)]
		if !ok {
			return noRecording(fmt.Sprintf("a call of %s with arguments %s", req.Params.Name, canonicalJSON(req.Params.Arguments))), nil
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("recorded result of %s: %w", req.Params.Name, err)
		}
		return &res, nil
	})
	return nil
}

func (r *recording) readResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	raw, ok := r.reads[req.Params.URI]
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	var res mcp.ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("recorded read of %s: %w", req.Params.URI, err)
	}
	return &res, nil
}

func (r *recording) getPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	args, _ := json.Marshal(req.Params.Arguments)
	if len(req.Params.Arguments) == 0 {
		args = nil
	}
	raw, ok := r.prompts[mockKey(req.Params.Name, args)]
	if !ok {
		return nil, fmt.Errorf("mcp-audit mock: no recording matches prompt %s with arguments %s", req.Params.Name, canonicalJSON(args))
	}
	var res mcp.GetPromptResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("recorded prompt %s: %w", req.Params.Name, err)
	}
	return &res, nil
}
