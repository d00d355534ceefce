package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/toolsearch"
)

// searchJSON is the shape of `search --json`. Field names are fixed: add
// fields, never rename or remove one.
type searchJSON struct {
	Query   string             `json:"query"`
	Results []searchResultJSON `json:"results"`
}

type searchResultJSON struct {
	Name   string  `json:"name"`
	Server string  `json:"server"`
	Tool   string  `json:"tool"`
	Score  float64 `json:"score"`
}

// runSearch discovers and connects like `run --once` (cached tools of
// servers still connecting count), ranks every tool of the session for
// the query, prints the best and tears down. The query is never recorded.
func runSearch(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("search", g)
	var df discoveryFlags
	df.register(fs)
	server := fs.String("server", "", "only rank the tools of this `SERVER`")
	limit := fs.Int("limit", 10, "print the best `N` tools")
	gate := fs.Duration("gate", manager.DefaultGate, "startup gate")
	settleFor := fs.Duration("settle", 30*time.Second, "how long to wait for servers still connecting")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return usagef("usage: mcp-audit search QUERY [--server S] [--limit N] [--cwd DIR] [--config FILE]...")
	}
	if *limit <= 0 {
		return usagef("--limit must be positive")
	}
	if *gate <= 0 {
		return usagef("--gate must be positive")
	}
	query := pos[0]
	lopts, err := df.options()
	if err != nil {
		return err
	}
	_, j, closeStore, err := g.openJournal()
	if err != nil {
		return err
	}
	defer closeStore()
	logger := slog.New(newSkipShown(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), shownBySearch))
	if g.json {
		logger = slog.New(slog.DiscardHandler)
	}
	s, err := session.Start(ctx, j, &session.Options{Loader: lopts, Manager: &manager.Options{Gate: *gate, Logger: logger}})
	if err != nil {
		return err
	}
	defer s.Close(context.WithoutCancel(ctx))
	settle(ctx, s, *settleFor)

	view := s.Manager().View()
	idx := toolsearch.New()
	idx.Sync(view.Tools())
	out := searchJSON{Query: query, Results: []searchResultJSON{}}
	results := idx.Search(query, toolsearch.SearchOptions{Server: *server, Limit: *limit})
	for _, r := range results {
		out.Results = append(out.Results, searchResultJSON{Name: r.Tool.Name, Server: r.Tool.Server, Tool: r.Tool.Original, Score: r.Score})
	}
	if g.json {
		return g.writeJSON(out)
	}
	if len(results) == 0 {
		fmt.Fprintf(g.stdout, "no tool of %d matches %q\n", idx.Len(), escapeLine(query))
		return nil
	}
	fmt.Fprintf(g.stdout, "best %d of %d tools for %q\n\n", len(results), idx.Len(), escapeLine(query))
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSERVER\tSCORE\tDESCRIPTION")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", escapeLine(r.Tool.Name), escapeLine(r.Tool.Server),
			strconv.FormatFloat(r.Score, 'f', 2, 64), clip(escapeLine(firstLine(r.Tool.Def.Description)), 70))
	}
	return tw.Flush()
}
