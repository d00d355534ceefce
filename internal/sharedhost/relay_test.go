package sharedhost_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/internal/sharedhost"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
)

// TestRelayTakesListsRecordedWhileBuilt has the first resource list of a
// shared server recorded while its relay is being built, and its update
// handled before the relay follows the view's updates: the relay offers
// the resources all the same, to the first host that lists them.
func TestRelayTakesListsRecordedWhileBuilt(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "late", Version: "1"}, nil)
	srv.AddResource(&mcp.Resource{URI: "late://r/1", Name: "r1"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "late://r/1", Text: "r1"}}}, nil
	})
	// The shared host's first resources/list is answered only once the
	// relay is built.
	release := make(chan struct{})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/list" {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	})
	var (
		env       atomic.Pointer[spliceEnv]
		released  atomic.Bool
		handled   = make(chan struct{}) // follow handled an update that came after the list
		handledMu sync.Once
	)
	restore := sharedhost.SetTestHooks(func(string) {
		released.Store(true)
		close(release)
		select {
		case <-handled:
		case <-time.After(deadline):
			t.Error("follow never handled the update of the resource list")
		}
	}, func(u manager.Update) {
		if e := env.Load(); e != nil && released.Load() && e.recordedBy(events.TypeResourcesListed, u.Seq) {
			handledMu.Do(func() { close(handled) })
		}
	})
	t.Cleanup(restore) // after the shared host ended: cleanups run last first
	e := newSpliceEnv(t, srv)
	env.Store(e)
	h := e.attach("h1", nil)
	res, err := h.cs.ListResources(testCtx(t), nil)
	if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != "late://r/1" {
		t.Fatalf("resources/list: %v %+v, want late://r/1", err, res)
	}
}

// recordedBy reports whether the shared host's session recorded an event
// of type typ at seq or before.
func (e *spliceEnv) recordedBy(typ string, seq uint64) bool {
	for env, err := range e.st.ReadStream(context.Background(), "shared", 1) {
		if err != nil || env.Seq > seq {
			return false
		}
		if env.Type == typ {
			return true
		}
	}
	return false
}

// TestRelayFollowsCoalescedUpdates changes the tools of two shared
// servers while the shared host is busy with an earlier update: the
// manager's updates are coalesced, so the one it then handles names the
// second server only, and the first server's relay follows all the same.
func TestRelayFollowsCoalescedUpdates(t *testing.T) {
	srvs := map[string]*mcp.Server{}
	for _, name := range []string{"a", "b"} {
		srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		addEcho(srv, name+"_0")
		srvs[name] = srv
	}
	// Armed, follow waits after the next update it handled until it is
	// let go; after, it says when it handled the next one.
	var (
		armed, after atomic.Bool
		held         = make(chan struct{})
		letGo        = make(chan struct{})
		handled      = make(chan struct{})
	)
	restore := sharedhost.SetTestHooks(nil, func(manager.Update) {
		switch {
		case armed.CompareAndSwap(true, false):
			close(held)
			<-letGo
			after.Store(true)
		case after.CompareAndSwap(true, false):
			close(handled)
		}
	})
	t.Cleanup(restore) // after the shared host ended: cleanups run last first
	e := serveSplice(t, &sharedhost.Options{Idle: time.Hour, Manager: &manager.Options{
		RelistInterval: time.Nanosecond,
		Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := srvs[cfg.Command].Connect(ctx, st, nil); err != nil {
				return nil, err
			}
			return ct, nil
		},
	}}, nil)
	sessions := map[string]*mcp.ClientSession{}
	for _, name := range []string{"a", "b"} {
		c, err := shared.Dial(testCtx(t), e.socket, shared.Hello{Session: "h" + name, Pid: os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		att, err := c.Attach(testCtx(t), shared.Attach{Name: name, Config: events.ServerConfig{Command: name}, Command: name, Cwd: e.cwd})
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "h" + name, Version: "1"}, nil).Connect(testCtx(t), c.Transport(att), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		sessions[name] = cs
	}
	sub, err := e.j.Subscribe(testCtx(t), journal.SubscribeOptions{Session: "shared", Types: []string{events.TypeToolsListed}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// listed waits for the shared host's list of server to have tool.
	listed := func(server, tool string) {
		t.Helper()
		for {
			select {
			case env, ok := <-sub.C():
				if !ok {
					t.Fatal("subscription ended")
				}
				ev, err := events.Decode(env)
				if err != nil {
					t.Fatal(err)
				}
				if l := ev.(*events.ToolsListed); strings.HasPrefix(l.Server, server+"-") && slices.ContainsFunc(l.Tools, func(d events.ToolDef) bool { return d.Name == tool }) {
					return
				}
			case <-time.After(deadline):
				t.Fatalf("%s never listed %s", server, tool)
			}
		}
	}
	armed.Store(true)
	addEcho(srvs["b"], "b_1")
	listed("b", "b_1")
	select {
	case <-held:
	case <-time.After(deadline):
		t.Fatal("follow never handled the list of b")
	}
	addEcho(srvs["a"], "a_1")
	listed("a", "a_1")
	addEcho(srvs["b"], "b_2")
	listed("b", "b_2")
	close(letGo)
	select {
	case <-handled:
	case <-time.After(deadline):
		t.Fatal("follow never handled the lists made while it was busy")
	}
	for name, want := range map[string]string{"a": "a_1", "b": "b_2"} {
		res, err := sessions[name].ListTools(testCtx(t), nil)
		if err != nil || !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == want }) {
			t.Errorf("%s's relay: %v %+v, want %s", name, err, res, want)
		}
	}
}

// addEcho adds a tool name to srv that answers its name.
func addEcho(srv *mcp.Server, name string) {
	srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
	})
}
