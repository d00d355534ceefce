package manager

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// ElicitFunc answers a server's request for user input
// (elicitation/create) for the host: a form (Mode "form", fields in
// RequestedSchema) or a URL to visit (Mode "url"). It returns the action
// (accept, decline or cancel) and, for an accepted form, the values. A
// field of the form the answer leaves out gets the schema's default value
// (SEP-1034). The request's message and schema, and the answer's values,
// are never recorded.
type ElicitFunc func(ctx context.Context, server string, req *mcp.ElicitParams) (*mcp.ElicitResult, error)

// SampleFunc answers a server's request for a model completion
// (sampling/createMessage) for the host. Neither the messages nor the
// answer are recorded, only their counts, the model and the stop reason.
type SampleFunc func(ctx context.Context, server string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)

// DeclineElicitation is an [ElicitFunc] that declines every request.
func DeclineElicitation(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "decline"}, nil
}

// AcceptElicitationDefaults is an [ElicitFunc] that accepts a form with
// the schema's default values when every required field has one, and
// declines any other form (only a user could fill it) and a URL request
// (there is no user to visit it).
func AcceptElicitationDefaults(_ context.Context, _ string, req *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if req.Mode == "url" || !schemaDefaults(req.RequestedSchema).complete(nil) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
}

// elicitHandler is the go-sdk's elicitation handler of server s on lc: it
// records the request, asks the host, fills in defaults and records the
// answer, under one correlation id. A request over the connection's limits
// (8 requests in flight, 10 a second) is declined at once,
// without asking the host, and counted.
func (m *Manager) elicitHandler(s *server, lc *liveConn) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if !m.admit(s, lc, methodElicit) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		defer m.endRequest(lc, methodElicit)
		noteRound(ctx)
		p := req.Params
		if p == nil {
			p = &mcp.ElicitParams{}
		}
		mode := p.Mode
		if mode == "" {
			mode = "form"
		}
		defaults := schemaDefaults(p.RequestedSchema)
		id := "elicit-" + strconv.FormatUint(m.callSeq.Add(1), 10)
		m.emitDeferred(id, &events.ElicitationRequested{Server: s.name, Mode: mode, Fields: len(defaults.fields)})
		begin := m.now()
		res, err := m.opts.Elicit(ctx, s.name, p)
		ans := &events.ElicitationAnswered{Server: s.name}
		if err == nil && res == nil {
			res = &mcp.ElicitResult{Action: "cancel"}
		}
		if err != nil {
			ans.Error = events.RedactText(err.Error())
		} else {
			if res.Action == "accept" {
				res.Content = defaults.fill(res.Content)
			}
			ans.Action, ans.Fields = res.Action, len(res.Content)
		}
		ans.Duration = m.now().Sub(begin)
		m.emitDeferred(id, ans)
		return res, err
	}
}

// sampleHandler is the go-sdk's sampling handler of server s on lc. A
// request over the connection's limits fails at once, without asking the
// host, and is counted.
func (m *Manager) sampleHandler(s *server, lc *liveConn) func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		if !m.admit(s, lc, methodSample) {
			return nil, errTooManyRequests
		}
		defer m.endRequest(lc, methodSample)
		noteRound(ctx)
		p := req.Params
		if p == nil {
			p = &mcp.CreateMessageParams{}
		}
		id := "sample-" + strconv.FormatUint(m.callSeq.Add(1), 10)
		m.emitDeferred(id, &events.SamplingRequested{Server: s.name, Messages: len(p.Messages), MaxTokens: p.MaxTokens})
		begin := m.now()
		res, err := m.opts.Sample(ctx, s.name, p)
		ans := &events.SamplingAnswered{Server: s.name}
		switch {
		case err != nil:
			ans.Error = events.RedactText(err.Error())
		case res != nil:
			ans.Model, ans.StopReason = res.Model, res.StopReason
		}
		ans.Duration = m.now().Sub(begin)
		m.emitDeferred(id, ans)
		return res, err
	}
}

// formDefaults are the fields of a requested form and the default value
// of those that have one.
type formDefaults struct {
	fields   []string
	required []string
	defaults map[string]any
}

// schemaDefaults reads the fields of a form's requested schema (a flat
// object schema) and their defaults.
func schemaDefaults(schema any) formDefaults {
	var d formDefaults
	b, err := json.Marshal(schema)
	if err != nil {
		return d
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(b, &s) != nil {
		return d
	}
	d.required = s.Required
	d.defaults = map[string]any{}
	for name, p := range s.Properties {
		d.fields = append(d.fields, name)
		var v any
		if len(p.Default) > 0 && json.Unmarshal(p.Default, &v) == nil && v != nil {
			d.defaults[name] = v
		}
	}
	return d
}

// complete reports whether content, with the defaults filled in, holds
// every required field.
func (d formDefaults) complete(content map[string]any) bool {
	for _, name := range d.required {
		_, given := content[name]
		_, def := d.defaults[name]
		if !given && !def {
			return false
		}
	}
	return true
}

// fill returns content with every field it lacks that has a default set
// to that default.
func (d formDefaults) fill(content map[string]any) map[string]any {
	for name, v := range d.defaults {
		if _, ok := content[name]; ok {
			continue
		}
		if content == nil {
			content = map[string]any{}
		}
		content[name] = v
	}
	return content
}
