package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/session"
)

// runReadJSON is `run --once --read SERVER:URI` in --json output.
type runReadJSON struct {
	Server   string                  `json:"server"`
	URI      string                  `json:"uri"`
	Contents []*mcp.ResourceContents `json:"contents"`
}

// runPromptJSON is `run --once --prompt SERVER/NAME` in --json output.
type runPromptJSON struct {
	Server   string               `json:"server"`
	Name     string               `json:"name"`
	Messages []*mcp.PromptMessage `json:"messages"`
}

// parseRead splits --read SERVER:URI at the first colon (server names have
// none).
func parseRead(v string) (server, uri string, err error) {
	server, uri, ok := strings.Cut(v, ":")
	if !ok || server == "" || uri == "" {
		return "", "", usagef("--read %q: want SERVER:URI", v)
	}
	return server, uri, nil
}

// parsePrompt splits --prompt SERVER/NAME and decodes --prompt-args, an
// object of string values.
func parsePrompt(v, argsJSON string) (server, name string, args map[string]string, err error) {
	server, name, ok := strings.Cut(v, "/")
	if !ok || server == "" || name == "" {
		return "", "", nil, usagef("--prompt %q: want SERVER/NAME", v)
	}
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		return "", "", nil, usagef("--prompt-args: want a JSON object of strings: %v", err)
	}
	return server, name, args, nil
}

// readResource1 reads one resource for run --once and prints it.
func readResource1(ctx context.Context, g *globals, s *session.Session, server, uri string) (*runReadJSON, error) {
	res, err := s.Manager().ReadResource(ctx, server, uri)
	if err != nil {
		return nil, fmt.Errorf("--read %s:%s: %w", server, uri, err)
	}
	out := &runReadJSON{Server: server, URI: uri, Contents: res.Contents}
	if out.Contents == nil {
		out.Contents = []*mcp.ResourceContents{}
	}
	if !g.json {
		fmt.Fprintf(g.stdout, "\nread %s %s: %d item(s)\n", escapeLine(server), escapeLine(uri), len(out.Contents))
		for _, c := range out.Contents {
			switch {
			case c.Text != "":
				fmt.Fprintf(g.stdout, "  %s\n", escapeLine(firstLine(c.Text)))
			default:
				fmt.Fprintf(g.stdout, "  %s (%s, %d bytes)\n", escapeLine(c.URI), escapeLine(c.MIMEType), len(c.Blob))
			}
		}
	}
	return out, nil
}

// getPrompt1 gets one prompt for run --once and prints its messages.
func getPrompt1(ctx context.Context, g *globals, s *session.Session, server, name string, args map[string]string) (*runPromptJSON, error) {
	res, err := s.Manager().GetPrompt(ctx, server, name, args)
	if err != nil {
		return nil, fmt.Errorf("--prompt %s/%s: %w", server, name, err)
	}
	out := &runPromptJSON{Server: server, Name: name, Messages: res.Messages}
	if out.Messages == nil {
		out.Messages = []*mcp.PromptMessage{}
	}
	if !g.json {
		fmt.Fprintf(g.stdout, "\nprompt %s/%s: %d message(s)\n", escapeLine(server), escapeLine(name), len(out.Messages))
		for _, msg := range out.Messages {
			text := "(" + fmt.Sprintf("%T", msg.Content) + ")"
			if t, ok := msg.Content.(*mcp.TextContent); ok {
				text = firstLine(t.Text)
			}
			fmt.Fprintf(g.stdout, "  %s: %s\n", msg.Role, escapeLine(text))
		}
	}
	return out, nil
}
