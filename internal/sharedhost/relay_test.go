package sharedhost_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/sharedhost"
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
