package manager

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// The output budget keeps one huge tool result from filling an agent's
// context. It counts the result's text: its text items and the text of its
// embedded resources. Images, audio, blobs and structuredContent (data for
// the host, which the spec has servers repeat as text for the model) pass
// whole. A result over its server's budget reaches the caller with its
// text cut to the budget, in order (items past it are dropped), and one
// more text item, the marker, that names the file holding the whole
// result.

// defaultMaxOutputBytes is the output budget of a server whose config sets
// no maxOutputBytes: 256 KiB of text per call result.
const defaultMaxOutputBytes = 256 << 10

// maxOutputOf returns the output budget of cfg; 0 means none.
func maxOutputOf(cfg events.ServerConfig) int64 {
	if cfg.MaxOutputBytes == nil {
		return defaultMaxOutputBytes
	}
	return max(*cfg.MaxOutputBytes, 0)
}

// defaultOutputDir returns $XDG_STATE_HOME/mcplife/outputs, else
// ~/.local/state/mcplife/outputs, else "" (no home directory).
func defaultOutputDir() string {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "mcplife", "outputs")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "state", "mcplife", "outputs")
}

// textBytes returns the size of r's text: its text items and the text of
// its embedded resources.
func textBytes(r *CallResult) int64 {
	var n int64
	for _, c := range r.Result.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			n += int64(len(c.Text))
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				n += int64(len(c.Resource.Text))
			}
		}
	}
	return n
}

// applyBudget holds r, a result server sent for tool, to the server's
// output budget limit (0: none). It returns the size of r's text as sent
// and whether it was cut. A cut result's whole is written to a file under
// [Options.OutputDir] first; the marker names it, or says why it could
// not be written (then FullOutput stays empty).
func (m *Manager) applyBudget(server, tool string, r *CallResult, limit int64) (size int64, cut bool) {
	size = textBytes(r)
	if limit <= 0 || size <= limit {
		return size, false
	}
	path, err := m.saveOutput(server, tool, r)
	if err != nil {
		m.log.Warn("MCP tool result over the output budget not saved", "server", server, "tool", tool, "err", err)
	}
	left := limit // after the first cut, 0: the rest of the text is dropped
	take := func(text string) string {
		if int64(len(text)) <= left {
			left -= int64(len(text))
			return text
		}
		text, left = cutUTF8(text, int(left)), 0
		return text
	}
	keep := make([]mcp.Content, 0, len(r.Result.Content)+1)
	for _, c := range r.Result.Content {
		switch item := c.(type) {
		case *mcp.TextContent:
			text := take(item.Text)
			if text == "" && item.Text != "" {
				continue // past the budget
			}
			cut := *item
			cut.Text = text
			c = &cut
		case *mcp.EmbeddedResource:
			if item.Resource == nil || item.Resource.Text == "" {
				break
			}
			res := *item.Resource
			if res.Text = take(res.Text); res.Text == "" && len(res.Blob) == 0 {
				continue
			}
			cut := *item
			cut.Resource = &res
			c = &cut
		}
		keep = append(keep, c)
	}
	marker := fmt.Sprintf("[mcplife: output cut to %d of %d bytes of text (the output budget, maxOutputBytes, of MCP server %q); ", limit, size, server)
	if err == nil {
		marker += "the whole result is in " + path + "]"
	} else {
		marker += "the whole result could not be saved: " + err.Error() + "]"
	}
	whole := *r.Result
	whole.Content = append(keep, &mcp.TextContent{Text: marker})
	r.Result = &whole
	r.Truncated, r.FullOutput = true, path
	return size, true
}

// saveOutput writes r whole to a new 0600 file under the output directory
// and returns its path: the text of a result that is only text (no other
// content, no structuredContent) as a .txt file, else the result's JSON.
func (m *Manager) saveOutput(server, tool string, r *CallResult) (string, error) {
	dir := m.opts.OutputDir
	if dir == "" {
		return "", errors.New("no state directory (set XDG_STATE_HOME or HOME, or manager Options.OutputDir)")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	ext, data := ".txt", []byte(nil)
	if textOnly(r) {
		data = []byte(r.Text())
	} else {
		b, err := json.Marshal(r.Result)
		if err != nil {
			return "", err
		}
		ext, data = ".json", b
	}
	name := fileSafe(server) + "_" + fileSafe(tool) + "_" + m.now().UTC().Format("20060102T150405") + "_*" + ext
	f, err := os.CreateTemp(dir, name) // mode 0600
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// textOnly reports whether r is text items and nothing else.
func textOnly(r *CallResult) bool {
	if r.Result.StructuredContent != nil {
		return false
	}
	for _, c := range r.Result.Content {
		if t, ok := c.(*mcp.TextContent); !ok || t.Annotations != nil || len(t.Meta) > 0 {
			return false
		}
	}
	return true
}

// fileSafe returns s with every byte outside [A-Za-z0-9_.-] replaced by
// "_", cut to 40 bytes, for a file name.
func fileSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 40; i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}
