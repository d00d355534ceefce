package events

import (
	"encoding/json"
	"time"
)

// Events of a server's resources and prompts.

// Type strings of the resource and prompt events. They are part of the
// stored format: never change one.
const (
	TypeResourcesListed = "ResourcesListed"
	TypePromptsListed   = "PromptsListed"
	TypeResourceUpdated = "ResourceUpdated"
	TypeResourceRead    = "ResourceRead"
	TypePromptRetrieved = "PromptRetrieved"
)

// ResourceDef is one resource as the server listed it (resources/list).
type ResourceDef struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Size        int64           `json:"size,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Icons       json.RawMessage `json:"icons,omitempty"`
}

// ResourceTemplateDef is one resource template (resources/templates/list).
type ResourceTemplateDef struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Icons       json.RawMessage `json:"icons,omitempty"`
}

// PromptDef is one prompt as the server listed it (prompts/list).
type PromptDef struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       json.RawMessage  `json:"icons,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// ResourcesListed is recorded when a server's resources and resource
// templates were listed (all pages), like [ToolsListed]: Hash identifies
// the lists, Count is the number of resources.
type ResourcesListed struct {
	Server     string                `json:"server"`
	ConfigHash string                `json:"configHash"`
	Resources  []ResourceDef         `json:"resources"`
	Templates  []ResourceTemplateDef `json:"templates,omitempty"`
	Hash       string                `json:"hash"`
	Count      int                   `json:"count"`
	Duration   time.Duration         `json:"duration"`
	Cause      ListCause             `json:"cause"`
	// CacheAge is the age of the lists served from the cache (cause
	// "cache").
	CacheAge time.Duration `json:"cacheAge,omitempty"`
	CacheHints
}

// PromptsListed is recorded when a server's prompts were listed (all
// pages), like [ToolsListed].
type PromptsListed struct {
	Server     string        `json:"server"`
	ConfigHash string        `json:"configHash"`
	Prompts    []PromptDef   `json:"prompts"`
	Hash       string        `json:"hash"`
	Count      int           `json:"count"`
	Duration   time.Duration `json:"duration"`
	Cause      ListCause     `json:"cause"`
	// CacheAge is the age of the list served from the cache (cause
	// "cache").
	CacheAge time.Duration `json:"cacheAge,omitempty"`
	CacheHints
}

// ResourceUpdated is recorded when a server said a resource the session
// subscribed to changed (notifications/resources/updated). A resource's
// updates are recorded at most once a second: the first at once, the
// others of that second as one at its end, Coalesced counting the updates
// it stands for beyond one.
type ResourceUpdated struct {
	Server    string `json:"server"`
	URI       string `json:"uri"`
	Coalesced int    `json:"coalesced,omitempty"`
}

// ResourceRead is recorded when a read of one of the server's resources
// (resources/read) finished: the URI as recorded in the server's lists,
// how many contents the result held, how long it took, and Error (scrubbed)
// when it failed. The contents are never recorded.
type ResourceRead struct {
	Server   string        `json:"server"`
	URI      string        `json:"uri"`
	Contents int           `json:"contents"`
	Duration time.Duration `json:"duration"`
	Error    string        `json:"error,omitempty"`
}

// PromptRetrieved is recorded when a prompts/get of one of the server's
// prompts finished: the prompt's name as recorded, how many messages the
// result held, how long it took, and Error (scrubbed) when it failed. The
// arguments and messages are never recorded.
type PromptRetrieved struct {
	Server   string        `json:"server"`
	Prompt   string        `json:"prompt"`
	Messages int           `json:"messages"`
	Duration time.Duration `json:"duration"`
	Error    string        `json:"error,omitempty"`
}

func (*ResourceRead) Type() string         { return TypeResourceRead }
func (*PromptRetrieved) Type() string      { return TypePromptRetrieved }
func (e *ResourceRead) ServerName() string { return e.Server }
func (e *PromptRetrieved) ServerName() string {
	return e.Server
}

func (*ResourcesListed) Type() string { return TypeResourcesListed }
func (*PromptsListed) Type() string   { return TypePromptsListed }
func (*ResourceUpdated) Type() string { return TypeResourceUpdated }

func (e *ResourcesListed) ServerName() string { return e.Server }
func (e *PromptsListed) ServerName() string   { return e.Server }
func (e *ResourceUpdated) ServerName() string { return e.Server }

// HashList returns the hex SHA-256 of the canonical JSON of v (a list of
// tools, resources, templates or prompts), so two lists that differ only
// in key order hash the same. A value that is not valid JSON (a broken
// schema) is hashed as it marshals, so it still gets a stable hash.
func HashList(v any) string {
	b, err := canonicalJSON(v)
	if err != nil {
		b, _ = json.Marshal(v)
	}
	return hashBytes(b)
}
