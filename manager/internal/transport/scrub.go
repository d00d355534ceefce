package transport

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// Server-supplied texts. What a server says about itself (its
// instructions and server info, its tools, resources, templates and
// prompts) is recorded, and a server that knows a secret (its env, a
// header, an inherited credential) may put it there. Each such text is
// scrubbed of the connection's secrets and of credential-like name=value
// pairs before it is recorded; resource URIs are redacted like configured
// URLs too.
//
// These texts are also what the session shows the model (the view is a
// projection of the record), so scrubbing them must not garble ordinary
// words: only secrets of at least minListSecretLen bytes that are not one
// plain word ("production", "READONLY") are looked for, and in JSON (tool
// schemas, annotations, icons, capabilities) only string values and keys
// are changed, so the JSON stays valid.
//
// Names and URIs are used to address things on the server: a tool name, a
// resource URI or a prompt name that scrubbing changed is recorded
// scrubbed, and the connection maps the recorded form back to the server's
// own when the session calls, reads, subscribes or gets it.

// minListSecretLen is the shortest secret looked for in server-supplied
// texts.
const minListSecretLen = 8

// listSecret reports whether v is looked for in server-supplied texts: at
// least minListSecretLen bytes, and not one plain word of letters in one
// case, which an environment value often is ("production", "DEBUG") and a
// description says for other reasons.
func listSecret(v string) bool {
	if len(v) < minListSecretLen {
		return false
	}
	lower, upper := true, true
	for i := 0; i < len(v); i++ {
		c := v[i]
		lower = lower && 'a' <= c && c <= 'z'
		upper = upper && 'A' <= c && c <= 'Z'
	}
	return !lower && !upper
}

// newListScrubber returns the replacer of the secrets that listSecret
// selects, each in its plain and in its JSON-escaped form (which is how
// it appears inside a JSON text), by [events.Redacted], longest first.
func newListScrubber(secrets []string) *strings.Replacer {
	var forms []string
	for _, s := range secrets {
		if !listSecret(s) {
			continue
		}
		forms = append(forms, s)
		if b, err := json.Marshal(s); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != s {
				forms = append(forms, esc)
			}
		}
	}
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, s := range forms {
		pairs = append(pairs, s, events.Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// scrubListed removes the connection's secrets and credential-like pairs
// from a server-supplied text that is recorded.
func (r Resolved) scrubListed(s string) string {
	if r.lists != nil {
		s = r.lists.Replace(s)
	}
	return events.RedactText(r.scrubOAuth(s))
}

// ScrubMessage removes the connection's secrets from a JSON-RPC message
// that is recorded in a transcript: every resolved and configured value
// and credential-like pairs (as [Resolved.ScrubText] does), and the
// secrets in their JSON-escaped forms.
func (r Resolved) ScrubMessage(s string) string {
	if r.lists != nil {
		s = r.lists.Replace(s)
	}
	return r.ScrubText(s)
}

// ScrubListedURL scrubs a server-supplied URI that is recorded, like the
// other server-supplied texts; its credential-like query parameters and
// user info are redacted as well.
func (r Resolved) ScrubListedURL(s string) string {
	return events.RedactURL(r.scrubListed(s))
}

// scrubListedJSON returns raw with the string values and keys scrubbed
// (scrubListed); raw itself, byte for byte, when nothing in it needs it.
func (r Resolved) scrubListedJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || r.scrubListed(string(raw)) == string(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(r.scrubListed(string(raw))) // not JSON: as text
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep the marker readable
	if err := enc.Encode(r.scrubJSONValue(v)); err != nil {
		return json.RawMessage(r.scrubListed(string(raw)))
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func (r Resolved) scrubJSONValue(v any) any {
	switch v := v.(type) {
	case string:
		return r.scrubListed(v)
	case []any:
		for i, e := range v {
			v[i] = r.scrubJSONValue(e)
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[r.scrubListed(k)] = r.scrubJSONValue(e)
		}
		return out
	}
	return v
}

// ScrubConnected scrubs the server-supplied texts of a ServerConnected.
func (r Resolved) ScrubConnected(e *events.ServerConnected) {
	e.PeerName, e.PeerVersion = r.scrubListed(e.PeerName), r.scrubListed(e.PeerVersion)
	e.Instructions = r.scrubListed(e.Instructions)
	e.Capabilities = r.scrubListedJSON(e.Capabilities)
}

// ScrubTools returns defs scrubbed for the record, and the server's own
// name of each tool whose recorded name scrubbing changed (nil when none).
// defs is not modified.
func (r Resolved) ScrubTools(defs []events.ToolDef) ([]events.ToolDef, map[string]string) {
	var live map[string]string
	out := make([]events.ToolDef, len(defs))
	for i, d := range defs {
		name := r.scrubListed(d.Name)
		if name != d.Name {
			if live == nil {
				live = map[string]string{}
			}
			if _, dup := live[name]; !dup {
				live[name] = d.Name
			}
		}
		out[i] = events.ToolDef{
			Name: name, Title: r.scrubListed(d.Title), Description: r.scrubListed(d.Description),
			InputSchema: r.scrubListedJSON(d.InputSchema), OutputSchema: r.scrubListedJSON(d.OutputSchema),
			Annotations: r.scrubListedJSON(d.Annotations), Icons: r.scrubListedJSON(d.Icons),
		}
	}
	return out, live
}

// ScrubResources scrubs the resources and templates of a ResourcesListed
// in place and returns the server's own URI of each resource (and URI
// template) whose recorded form scrubbing changed (nil when none).
func (r Resolved) ScrubResources(e *events.ResourcesListed) map[string]string {
	var live map[string]string
	keep := func(recorded, own string) {
		if recorded == own {
			return
		}
		if live == nil {
			live = map[string]string{}
		}
		if _, dup := live[recorded]; !dup {
			live[recorded] = own
		}
	}
	for i := range e.Resources {
		d := &e.Resources[i]
		uri := r.ScrubListedURL(d.URI)
		keep(uri, d.URI)
		d.URI, d.Name, d.Title, d.Description = uri, r.scrubListed(d.Name), r.scrubListed(d.Title), r.scrubListed(d.Description)
		d.MIMEType = r.scrubListed(d.MIMEType)
		d.Annotations, d.Icons = r.scrubListedJSON(d.Annotations), r.scrubListedJSON(d.Icons)
	}
	for i := range e.Templates {
		d := &e.Templates[i]
		uri := r.scrubListed(d.URITemplate)
		keep(uri, d.URITemplate)
		d.URITemplate, d.Name, d.Title, d.Description = uri, r.scrubListed(d.Name), r.scrubListed(d.Title), r.scrubListed(d.Description)
		d.MIMEType = r.scrubListed(d.MIMEType)
		d.Annotations, d.Icons = r.scrubListedJSON(d.Annotations), r.scrubListedJSON(d.Icons)
	}
	return live
}

// ScrubPrompts scrubs the prompts of a PromptsListed in place and returns
// the server's own name of each prompt whose recorded name scrubbing
// changed (nil when none).
func (r Resolved) ScrubPrompts(e *events.PromptsListed) map[string]string {
	var live map[string]string
	for i := range e.Prompts {
		p := &e.Prompts[i]
		name := r.scrubListed(p.Name)
		if name != p.Name {
			if live == nil {
				live = map[string]string{}
			}
			if _, dup := live[name]; !dup {
				live[name] = p.Name
			}
		}
		p.Name, p.Title, p.Description, p.Icons = name, r.scrubListed(p.Title), r.scrubListed(p.Description), r.scrubListedJSON(p.Icons)
		for j := range p.Arguments {
			a := &p.Arguments[j]
			a.Name, a.Title, a.Description = r.scrubListed(a.Name), r.scrubListed(a.Title), r.scrubListed(a.Description)
		}
	}
	return live
}
