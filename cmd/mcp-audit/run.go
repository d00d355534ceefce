package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/session"
)

// runJSON is the shape of `run --once --json`, documented in the README.
// Field names are fixed, so scripts can rely on them: add fields, never
// rename or remove one.
type runJSON struct {
	Session string              `json:"session"`
	Gate    runGateJSON         `json:"gate"`
	Servers []runServerJSON     `json:"servers"`
	Tools   []toolJSON          `json:"tools"`
	Errors  []session.LoadError `json:"errors"`
	Call    *runCallJSON        `json:"call,omitempty"`
	Read    *runReadJSON        `json:"read,omitempty"`
	Prompt  *runPromptJSON      `json:"prompt,omitempty"`
	Budget  *budgetJSON         `json:"budget,omitempty"`
}

// budgetJSON is the tool budget's part of `run --once --json` and
// `inspect --json`: the budget, what the exposed tools cost (the search
// tool included when the budget applies), how many of the MCP tools are
// exposed, and what every tool would cost.
type budgetJSON struct {
	Tokens       int  `json:"tokens"`
	LoadedTokens int  `json:"loadedTokens"`
	Loaded       int  `json:"loaded"`
	Total        int  `json:"total"`
	Applied      bool `json:"applied"`
	TotalTokens  int  `json:"totalTokens"`
}

// defaultToolBudget is run's tool budget: 10 % of a 200k-token context.
const defaultToolBudget = 20000

func budgetOf(e session.Exposure) *budgetJSON {
	return &budgetJSON{Tokens: e.Budget, LoadedTokens: e.LoadedTokens, Loaded: e.Loaded, Total: e.Total, Applied: e.Applied, TotalTokens: e.Tokens}
}

// exposedTools lists every MCP tool of view with whether the exposure
// loads it, and the search tool (server "") when the budget applies.
func exposedTools(view *projector.ToolView, e session.Exposure) []toolJSON {
	out := []toolJSON{}
	if e.Applied {
		out = append(out, toolJSON{Name: session.SearchToolName, Loaded: new(true)})
	}
	for _, t := range view.Tools() {
		out = append(out, toolJSON{Name: t.Name, Server: t.Server, Tool: t.Original, Deferred: t.Deferred, Loaded: new(e.Exposed(t.Name))})
	}
	return out
}

type runGateJSON struct {
	ElapsedMs float64                   `json:"elapsedMs"`
	Outcomes  map[string]events.Outcome `json:"outcomes"`
}

type runServerJSON struct {
	Name      string           `json:"name"`
	Status    projector.Status `json:"status"`
	Transport string           `json:"transport"`
	// SharedInstance is the shared host's instance of a shared server;
	// NotShared says sharing was asked for but the server runs here.
	SharedInstance string            `json:"sharedInstance,omitempty"`
	NotShared      bool              `json:"notShared,omitempty"`
	Source         events.SourceMeta `json:"source"`
	Tools          int               `json:"tools"`
	Resources      int               `json:"resources"`
	Prompts        int               `json:"prompts"`
	Pid            int               `json:"pid,omitempty"`
	ReadyMs        *float64          `json:"readyMs"`
	Error          string            `json:"error,omitempty"`
}

type runCallJSON struct {
	Server            string            `json:"server"`
	Tool              string            `json:"tool"`
	IsError           bool              `json:"isError"`
	Content           []json.RawMessage `json:"content"`
	StructuredContent any               `json:"structuredContent,omitempty"`
	// Truncated and FullOutput: the server's output budget cut the
	// result's text; the file holds the whole result.
	Truncated  bool   `json:"truncated,omitempty"`
	FullOutput string `json:"fullOutput,omitempty"`
}

// runOptions are the flags of run (and what demo sets itself).
type runOptions struct {
	discoveryFlags
	gate   time.Duration
	once   bool
	settle time.Duration
	call   string
	args   string
	budget int
	eager  bool
	watch  bool
	elicit string
	read   string
	prompt string
	pargs  string
	login  bool
	roots  multiFlag
	strict bool
	share  bool
}

// closeTimeout bounds run's teardown, recording included.
const closeTimeout = 10 * time.Second

func runRun(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("run", g)
	var o runOptions
	o.register(fs)
	fs.DurationVar(&o.gate, "gate", manager.DefaultGate, "startup gate")
	fs.BoolVar(&o.eager, "eager-cache", false, "end the startup gate at once when every server still connecting has cached tools")
	fs.BoolVar(&o.once, "once", false, "wait for late servers (up to --settle), print, tear down and exit")
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "with --once: how long to wait for servers still connecting")
	fs.StringVar(&o.call, "call", "", "call one tool: `SERVER/TOOL` (the tool's own name) or its mcp_SERVER_TOOL name from the tool table")
	fs.BoolVar(&o.strict, "strict", false, "with --once: exit 1 unless every server connected and every config file was read")
	fs.StringVar(&o.args, "args", "{}", "JSON arguments for --call")
	fs.StringVar(&o.read, "read", "", "with --once: read one resource, `SERVER:URI`")
	fs.StringVar(&o.prompt, "prompt", "", "with --once: get one prompt, `SERVER/NAME`")
	fs.StringVar(&o.pargs, "prompt-args", "{}", "JSON object of string arguments for --prompt")
	fs.StringVar(&o.elicit, "elicit", "decline", "answer servers' requests for user input: `decline` or accept-defaults (the form's default values); run never samples")
	fs.BoolVar(&o.login, "login", false, "run the OAuth browser login for servers that need it, and for step-ups (without it, run never opens a browser)")
	fs.BoolVar(&o.watch, "watch-config", true, "while running (not with --once), apply edits of the config files: connect added and changed servers, disconnect removed ones")
	fs.IntVar(&o.budget, "tool-budget", defaultToolBudget, "tool budget in estimated `TOKENS` of the exposed tool definitions; over it, tools wait behind a search tool (0: off)")
	fs.BoolVar(&o.share, "share", false, "attach stdio servers to the user's shared host (mcp-audit daemon, started when none runs) instead of starting them here; without one, they run here (unset: on when a shared host is running, --share=false: off)")
	fs.Var(&o.roots, "root", "a `DIR` the servers get as a root (roots/list), repeatable; replaces the default root, the session's cwd")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("run takes no arguments (use --cwd DIR, --config FILE)")
	}
	elicit := map[string]manager.ElicitFunc{"decline": manager.DeclineElicitation, "accept-defaults": manager.AcceptElicitationDefaults}[o.elicit]
	if elicit == nil {
		return usagef("--elicit %q: want decline or accept-defaults", o.elicit)
	}
	if o.gate <= 0 {
		return usagef("--gate must be positive")
	}
	if o.strict && !o.once {
		return usagef("--strict needs --once")
	}
	if o.budget < 0 {
		return usagef("--tool-budget must not be negative (0 turns it off)")
	}
	var callServer, callTool string
	if o.call != "" {
		var ok bool
		callServer, callTool, ok = strings.Cut(o.call, "/")
		switch {
		case !ok && strings.HasPrefix(o.call, session.MCPPrefix) && len(o.call) > len(session.MCPPrefix):
			callServer, callTool = o.call, "" // a tool's exposed name, resolved once connected
		case !ok || callServer == "" || callTool == "":
			return usagef("--call %q: want SERVER/TOOL or a tool's mcp_SERVER_TOOL name", o.call)
		}
		if !json.Valid([]byte(o.args)) {
			return usagef("--args is not valid JSON")
		}
	}
	var readServer, readURI, promptServer, promptName string
	var promptArgs map[string]string
	if (o.read != "" || o.prompt != "") && !o.once {
		return usagef("--read and --prompt need --once")
	}
	if o.read != "" {
		if readServer, readURI, err = parseRead(o.read); err != nil {
			return err
		}
	}
	if o.prompt != "" {
		if promptServer, promptName, promptArgs, err = parsePrompt(o.prompt, o.pargs); err != nil {
			return err
		}
	}
	lopts, err := o.options()
	if err != nil {
		return err
	}
	roots, err := rootDirs(o.roots)
	if err != nil {
		return err
	}
	share := shareOptions(o.share, g)
	if !flagGiven(fs, "share") {
		share = runningShare()
	}
	_, j, closeStore, err := g.openJournal()
	if err != nil {
		return err
	}
	defer closeStore()

	// Warnings (late failures, drops) go to stderr, except on a terminal,
	// where the redrawn table shows them and a log line would break it.
	level := slog.LevelWarn
	if g.color {
		level = slog.LevelError
	}
	logger := slog.New(newSkipShown(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}), shownByRun))
	if g.json {
		logger = slog.New(slog.DiscardHandler)
	}
	// Before any server starts, and stopped after the teardown (defers
	// run last to first).
	defer adoptOrphans(ctx, g)()
	authz, err := newAuthorizer(g)
	if err != nil {
		return err
	}
	start := time.Now()
	id := journal.NewSessionID()
	if !g.json {
		// Before the wait for the gate, so the progress lines follow it.
		fmt.Fprintf(g.stdout, "session %s  (store %s)\n", id, mustPath(g))
	}
	var prog *progress
	if showProgress(g) {
		// Subscribed before the session starts, so no event is missed.
		if prog, err = startProgress(ctx, g, j, id, o.gate); err != nil {
			return err
		}
		defer prog.stop()
	}
	s, err := session.Start(ctx, j, &session.Options{
		ID: id, Loader: lopts, ToolBudget: o.budget,
		Manager:     &manager.Options{Gate: o.gate, EagerCache: o.eager, Elicit: elicit, Auth: manager.AuthOptions{OAuth: authz, Interactive: o.login}, Logger: logger, Roots: roots},
		WatchConfig: o.watch && !o.once,
		Share:       share,
	})
	if err != nil {
		return err
	}
	// Teardown is ours: a Ctrl-C still disconnects every server. It is
	// bounded, so a store that stopped answering cannot hold the process:
	// the servers are stopped first, and what could not be recorded by
	// then is logged.
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		s.Close(cctx)
	}()
	res := s.LoadResult()
	if prog != nil {
		prog.untilGate(ctx)
		if !o.once {
			prog.stop() // the table and its change lines take over
		}
	}
	if o.login {
		loginWaiting(ctx, g, s)
	}
	tableLines := 0
	if !g.json {
		printGate(g, res)
		tableLines = printServers(g, s.Manager().View())
	}

	if !o.once {
		if o.call != "" {
			if _, err := callTool1(ctx, g, s, callServer, callTool, o.args); err != nil {
				return err
			}
			if g.color && !g.json {
				tableLines = printServers(g, s.Manager().View()) // redraws start below the call's output
			}
		}
		var configChanges <-chan events.Envelope
		if o.watch {
			sub, err := j.Subscribe(ctx, journal.SubscribeOptions{Session: s.ID(), Types: []string{events.TypeConfigChanged}})
			if err != nil {
				return err
			}
			defer sub.Close()
			configChanges = sub.C()
		}
		if !g.json && !g.color {
			what := "changes"
			if o.watch {
				what = "changes and config edits"
			}
			fmt.Fprintf(g.stdout, "\nwatching for %s; Ctrl-C tears everything down\n", what)
		}
		follow(ctx, g, s, start, tableLines, configChanges)
		if !g.json {
			fmt.Fprintln(g.stdout, "\ndisconnecting all servers")
		}
		return nil
	}

	settle(ctx, s, o.settle)
	if prog != nil {
		prog.stop()
	}
	out := runJSON{Session: s.ID(), Gate: runGateJSON{Outcomes: map[string]events.Outcome{}}, Servers: []runServerJSON{}, Tools: []toolJSON{}, Errors: []session.LoadError{}}
	if res.Connect != nil {
		out.Gate.ElapsedMs = ms(res.Connect.Gate.Elapsed)
		if res.Connect.Gate.Outcomes != nil {
			out.Gate.Outcomes = res.Connect.Gate.Outcomes
		}
	}
	out.Errors = append(out.Errors, res.Errors...)
	view := s.Manager().View()
	connected := 0
	for _, st := range view.Servers() {
		if st.Status == projector.StatusConnected {
			connected++
		}
		var ready *float64
		if d, ok := st.ReadyAfter(); ok {
			v := ms(d)
			ready = &v
		}
		out.Servers = append(out.Servers, runServerJSON{Name: st.Name, Status: serverStatus(st), Transport: st.Transport,
			SharedInstance: st.SharedInstance, NotShared: st.NotShared, Source: st.Source, Tools: len(st.Tools), Resources: len(st.Resources), Prompts: len(st.Prompts), Pid: st.Pid,
			ReadyMs: ready, Error: st.Error})
		if st.Error != "" && !slices.ContainsFunc(out.Errors, func(e session.LoadError) bool { return e.Path == "mcp:"+st.Name }) {
			out.Errors = append(out.Errors, session.LoadError{Path: "mcp:" + st.Name, Error: st.Error})
		}
	}
	var callErr error
	if o.call != "" {
		out.Call, callErr = callTool1(ctx, g, s, callServer, callTool, o.args)
	}
	if o.read != "" && callErr == nil {
		out.Read, callErr = readResource1(ctx, g, s, readServer, readURI)
	}
	if o.prompt != "" && callErr == nil {
		out.Prompt, callErr = getPrompt1(ctx, g, s, promptServer, promptName, promptArgs)
	}
	// After the call, which may have loaded its tool.
	s.RefreshMCPTools()
	exp := s.Exposure()
	if o.budget > 0 {
		out.Budget = budgetOf(exp)
		out.Tools = exposedTools(s.Manager().View(), exp)
	} else {
		for _, t := range s.Tools() {
			if t.MCP != nil {
				out.Tools = append(out.Tools, toolJSON{Name: t.Name, Server: t.MCP.Server, Tool: t.MCP.Original, Deferred: t.MCP.Deferred})
			}
		}
	}
	if g.json {
		if err := g.writeJSON(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(g.stdout, "\nafter settling:")
		printServers(g, view)
		printTools(g, s)
		if b := out.Budget; b != nil {
			verdict := "under it, every tool is exposed"
			if b.Applied {
				verdict = fmt.Sprintf("%d of %d tools loaded, %d estimated tokens instead of %d; the rest behind %s", b.Loaded, b.Total, b.LoadedTokens, b.TotalTokens, session.SearchToolName)
			}
			fmt.Fprintf(g.stdout, "\ntool budget %d tokens: %d estimated tokens, %s\n", b.Tokens, b.TotalTokens, verdict)
		}
	}
	switch {
	case callErr != nil:
		return callErr
	case out.Call != nil && out.Call.IsError:
		return errCheckFailed
	case connected == 0:
		if !g.json {
			fmt.Fprintln(g.stderr, "mcp-audit: no server connected")
		}
		return errCheckFailed
	case o.strict:
		return strictCheck(g, view, res)
	}
	return nil
}

// settle waits until every server is connected with its first tool list,
// or failed, up to limit.
func settle(ctx context.Context, s *session.Session, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	s.WaitReady(ctx)
}

// follow keeps the server table current until ctx ends: on a terminal it
// redraws the table in place; otherwise (or with --json) it prints one line
// per server whose status or tool count changed, a server that appears
// included. Each ConfigChanged from configChanges (nil: none) is printed
// as one line, above the table on a terminal.
func follow(ctx context.Context, g *globals, s *session.Session, start time.Time, tableLines int, configChanges <-chan events.Envelope) {
	last := map[string]string{}
	primed := false // the servers of the first update are in last
	configChanged := func(env events.Envelope) {
		ev, err := events.Decode(env)
		cc, ok := ev.(*events.ConfigChanged)
		if err != nil || !ok {
			return
		}
		if g.json {
			g.writeJSONLine(map[string]any{"offsetMs": ms(time.Since(start)), "configChanged": cc})
			return
		}
		if g.color {
			fmt.Fprintf(g.stdout, "\x1b[%dA\x1b[J", tableLines)
		}
		fmt.Fprintf(g.stdout, "%10s  %s\n", fmtOffset(time.Since(start)), describeConfigChange(g, cc))
		if g.color {
			tableLines = printServers(g, s.Manager().View())
		}
	}
	update := func() {
		view := s.Manager().View()
		if g.color && !g.json {
			fmt.Fprintf(g.stdout, "\x1b[%dA\x1b[J", tableLines)
			tableLines = printServers(g, view)
			return
		}
		for _, st := range view.Servers() {
			status := serverStatus(st)
			line := fmt.Sprintf("%s %d", status, len(st.Tools))
			if last[st.Name] == line {
				continue
			}
			if _, seen := last[st.Name]; seen || primed {
				detail := fmt.Sprintf("%d tools", len(st.Tools))
				if st.Deferred {
					detail += " (cached)"
				}
				if st.Error != "" {
					detail += "  " + escapeLine(errorCause(st.Name, st.Error))
				}
				if g.json {
					g.writeJSONLine(map[string]any{"offsetMs": ms(time.Since(start)), "server": st.Name, "status": status, "tools": len(st.Tools), "error": st.Error})
				} else {
					fmt.Fprintf(g.stdout, "%10s  %-20s %-12s %s\n", fmtOffset(time.Since(start)), escapeLine(st.Name), g.statusColor(string(status)), detail)
				}
			}
			last[st.Name] = line
		}
		primed = true
	}
	update()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.Changes():
			update()
		case env, ok := <-configChanges:
			if !ok {
				configChanges = nil
				continue
			}
			configChanged(env)
		}
	}
}

// describeConfigChange says in one line what a ConfigChanged did.
func describeConfigChange(g *globals, cc *events.ConfigChanged) string {
	files := make([]string, len(cc.Paths))
	for i, p := range cc.Paths {
		files[i] = escapeLine(p)
	}
	where := strings.Join(files, ", ")
	if cc.Error != "" {
		return fmt.Sprintf("%s %s: %s; servers keep running", g.paint(colorRed, "config change not applied"), where, escapeLine(firstLine(cc.Error)))
	}
	var parts []string
	for _, l := range []struct {
		verb  string
		names []string
	}{{"added", cc.Added}, {"changed", cc.Changed}, {"removed", cc.Removed}} {
		if len(l.names) > 0 {
			names := make([]string, len(l.names))
			for i, n := range l.names {
				names[i] = escapeLine(n)
			}
			parts = append(parts, l.verb+" "+strings.Join(names, " "))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no server changed")
	}
	return fmt.Sprintf("config changed (%s): %s", where, strings.Join(parts, "; "))
}

// callTool1 calls SERVER/TOOL with argsJSON and prints the result.
func callTool1(ctx context.Context, g *globals, s *session.Session, server, tool, argsJSON string) (*runCallJSON, error) {
	if tool == "" { // server holds a tool's exposed name
		name := server
		if server, tool = toolByName(s, name); tool == "" {
			return nil, fmt.Errorf("--call %s: no such tool (servers may have failed; see the table)", name)
		}
	}
	var target *session.Tool
	for _, t := range s.Tools() {
		if t.MCP != nil && t.MCP.Server == server && t.MCP.Original == tool {
			target = &t
			break
		}
	}
	if target == nil {
		// A tool the budget holds back is loaded, as an agent's host would.
		for _, t := range s.Manager().Tools() {
			if t.Server == server && t.Original == tool {
				if err := s.LoadTools(ctx, t.Name); err != nil {
					return nil, fmt.Errorf("--call %s/%s: %w", server, tool, err)
				}
				if st, ok := s.Tool(t.Name); ok {
					target = &st
				}
				break
			}
		}
	}
	if target == nil {
		return nil, fmt.Errorf("--call %s/%s: no such tool (servers may have failed; see the table)", server, tool)
	}
	res, err := target.Call(ctx, json.RawMessage(argsJSON))
	if err != nil {
		return nil, fmt.Errorf("--call %s/%s: %w", server, tool, err)
	}
	out := &runCallJSON{Server: server, Tool: tool, IsError: res.Result.IsError, Content: []json.RawMessage{},
		StructuredContent: res.Result.StructuredContent, Truncated: res.Truncated, FullOutput: res.FullOutput}
	for _, c := range res.Result.Content {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("--call %s/%s: encode the result: %w", server, tool, err)
		}
		out.Content = append(out.Content, b)
	}
	if !g.json {
		verdict := g.paint(colorGreen, "ok")
		if res.Result.IsError {
			verdict = g.paint(colorRed, "error")
		}
		fmt.Fprintf(g.stdout, "\ncall %s (%s/%s): %s\n", escapeLine(target.Name), escapeLine(server), escapeLine(tool), verdict)
		body, marker := res, ""
		if content := res.Result.Content; res.Truncated && len(content) > 0 { // the marker, the last text item, gets a line of its own
			if t, ok := content[len(content)-1].(*mcp.TextContent); ok {
				body = &manager.CallResult{Result: &mcp.CallToolResult{Content: content[:len(content)-1]}}
				marker = t.Text
			}
		}
		for line := range strings.SplitSeq(clip(body.Text(), 2000), "\n") {
			fmt.Fprintf(g.stdout, "  %s\n", escapeText(line))
		}
		for _, c := range res.Result.Content {
			if _, ok := c.(*mcp.TextContent); !ok {
				fmt.Fprintf(g.stdout, "  [%s]\n", escapeLine(contentSummary(c)))
			}
		}
		if marker != "" {
			fmt.Fprintf(g.stdout, "  %s\n", escapeLine(marker))
		}
	}
	return out, nil
}

// contentSummary describes a content item that is not text by its type,
// MIME type and URI, as the server sent them (empty when absent).
func contentSummary(c mcp.Content) string {
	var item struct {
		Type     string `json:"type"`
		MIMEType string `json:"mimeType"`
		URI      string `json:"uri"`
	}
	if b, err := json.Marshal(c); err == nil {
		json.Unmarshal(b, &item)
	}
	return fmt.Sprintf("%s %s %s", item.Type, item.MIMEType, item.URI)
}

// printLoadErrors prints the errors of the initial load, one line each:
// a server's with the cause only (see [errorCause]), a file's without
// repeating its path.
func printLoadErrors(g *globals, res *session.LoadResult) {
	for _, e := range res.Errors {
		msg := e.Path + ": " + firstLine(e.Error)
		if server, ok := strings.CutPrefix(e.Path, "mcp:"); ok {
			msg = e.Path + ": " + errorCause(server, e.Error)
		} else if strings.HasPrefix(e.Error, e.Path) {
			msg = firstLine(e.Error) // "PATH:2:1: …" names the file already
		}
		fmt.Fprintf(g.stdout, "  %s %s\n", g.paint(colorRed, "error"), escapeLine(msg))
	}
	if res.Discovery != nil {
		for _, w := range res.Discovery.Warnings {
			fmt.Fprintf(g.stdout, "  %s %s\n", g.paint(colorYellow, "warning"), escapeLine(w))
		}
	}
}

func printGate(g *globals, res *session.LoadResult) {
	if res.Connect == nil {
		for _, e := range res.Errors {
			fmt.Fprintf(g.stdout, "%s %s: %s\n", g.paint(colorRed, "error"), escapeLine(e.Path), escapeText(e.Error))
		}
		return
	}
	gate := res.Connect.Gate
	if gate.Round == 0 {
		fmt.Fprintln(g.stdout, "no server to connect")
		printLoadErrors(g, res)
		return
	}
	var parts []string
	for _, name := range sortedKeys(gate.Outcomes) {
		parts = append(parts, escapeLine(name)+"="+g.statusColor(string(gate.Outcomes[name])))
	}
	fmt.Fprintf(g.stdout, "startup gate %s returned after %s: %s\n", gate.Gate, fmtDur(gate.Elapsed), strings.Join(parts, " "))
	printLoadErrors(g, res)
}

// printServers prints the server table and returns how many lines it took.
func printServers(g *globals, view *projector.ToolView) int {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	// The header's STATUS carries as many invisible colour bytes as the
	// coloured statuses below it, so the columns stay aligned.
	fmt.Fprintf(tw, "\nSERVER\t%s\tTRANSPORT\tSOURCE\tTOOLS\tREADY\tERROR\n", g.paint("39", "STATUS"))
	servers := view.Servers()
	for _, st := range servers {
		tools := strconv.Itoa(len(st.Tools))
		if st.Deferred {
			tools += " (cached)"
		}
		ready := "-"
		if d, ok := st.ReadyAfter(); ok {
			ready = fmtDur(d)
		}
		source := escapeLine(st.Source.ProviderName)
		if source == "" {
			source = "-"
		}
		errText := clip(escapeLine(errorCause(st.Name, st.Error)), 80)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", escapeLine(st.Name), g.statusColor(string(serverStatus(st))), transportCell(st), source, tools, ready, errText)
	}
	tw.Flush()
	return 2 + len(servers)
}

// transportCell is a server's TRANSPORT in the table: as its connection
// went, so a server that was to be shared but runs in this process (no
// shared host could be used) says so rather than "shared".
func transportCell(st projector.ServerState) string {
	if st.NotShared {
		return escapeLine(st.Transport) + " (not shared)"
	}
	return escapeLine(st.Transport)
}

func printTools(g *globals, s *session.Session) {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTOOL\tFROM\tDEFERRED")
	for _, t := range s.Tools() {
		fmt.Fprintf(tw, "%s\t%s\t%t\n", escapeLine(t.Name), escapeLine(t.Path), t.MCP != nil && t.MCP.Deferred)
	}
	tw.Flush()
}
