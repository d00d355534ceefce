package mcpgenkit

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/firebase/genkit/go/ai"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// response turns an MCP tool result into Genkit's multipart tool
// response: Output is what a model reads as the tool's JSON result,
// Content the media parts beside it.
//
// Media go into Content because that is where Genkit's model plugins look
// for them (googlegenai sends them with the function response); every
// other item stays in Output, because a plugin may refuse Content parts
// it cannot send (googlegenai fails on text and resource parts there).
func response(res *mcp.CallToolResult) *ai.MultipartToolResponse {
	if res == nil {
		return &ai.MultipartToolResponse{}
	}
	var (
		texts []string
		items []any // the MCP wire form of resource links, embedded resources, other kinds
		media []*ai.Part
	)
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts = append(texts, c.Text)
		case *mcp.ImageContent:
			media = append(media, mediaPart(c.MIMEType, c.Data, c))
		case *mcp.AudioContent:
			media = append(media, mediaPart(c.MIMEType, c.Data, c))
		case *mcp.EmbeddedResource:
			wire := wireForm(c)
			if r := c.Resource; r != nil && len(r.Blob) > 0 {
				// The bytes go to the model as media; the entry keeps
				// the resource's uri and type.
				if rc, ok := wire["resource"].(map[string]any); ok {
					delete(rc, "blob")
				}
				p := mediaPart(r.MIMEType, r.Blob, c)
				if p.Metadata == nil {
					p.Metadata = map[string]any{}
				}
				p.Metadata["uri"] = r.URI
				media = append(media, p)
			}
			items = append(items, wire)
		default:
			items = append(items, wireForm(c))
		}
	}
	text := strings.Join(texts, "\n\n")
	structured := normalize(res.StructuredContent)

	var output any
	switch {
	case res.IsError:
		out := map[string]any{"error": text}
		if structured != nil {
			out["structuredContent"] = structured
		}
		if len(items) > 0 {
			out["content"] = items
		}
		output = out
	case structured == nil && len(items) == 0:
		output = text
	case structured != nil && len(items) == 0 && serializes(texts, structured):
		output = structured
	default:
		out := map[string]any{}
		if len(texts) > 0 {
			out["text"] = text
		}
		if structured != nil {
			out["structuredContent"] = structured
		}
		if len(items) > 0 {
			out["content"] = items
		}
		output = out
	}
	return &ai.MultipartToolResponse{Output: output, Content: media}
}

// mediaPart is a Genkit media part holding data as a data: URL, with the
// item's annotations and _meta, when it has them, in the part's metadata.
func mediaPart(mimeType string, data []byte, item mcp.Content) *ai.Part {
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	p := ai.NewMediaPart(mimeType, "data:"+mimeType+";base64,"+base64.StdEncoding.EncodeToString(data))
	wire := wireForm(item)
	for _, k := range []string{"annotations", "_meta"} {
		if v, ok := wire[k]; ok {
			if p.Metadata == nil {
				p.Metadata = map[string]any{}
			}
			p.Metadata[k] = v
		}
	}
	return p
}

// wireForm is a content item as MCP sends it, decoded as Genkit holds
// JSON values.
func wireForm(c mcp.Content) map[string]any {
	b, err := c.MarshalJSON()
	if err != nil {
		return map[string]any{"error": "mcpgenkit: encode content: " + err.Error()}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]any{"error": "mcpgenkit: decode content: " + err.Error()}
	}
	return m
}

// normalize re-decodes v as a generic JSON value (maps, slices, float64s),
// the form Genkit passes tool outputs in; nil stays nil.
func normalize(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

// serializes reports whether every text item is a JSON encoding of the
// structured content, the text a server adds for clients that do not read
// structured content; such text says nothing the structured content does
// not.
func serializes(texts []string, structured any) bool {
	for _, t := range texts {
		var v any
		if err := json.Unmarshal([]byte(t), &v); err != nil || !reflect.DeepEqual(v, structured) {
			return false
		}
	}
	return true
}
