package peers

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/lifecycletest"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
)

const session = "peers"

// env is one test's store, journal and manager (see lifecycletest.New)
// with this package's helpers.
type env struct{ *lifecycletest.Env }

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{lifecycletest.New(t, session)}
}

// connect connects one server and fails the test unless it connected.
func (e *env) connect(ctx context.Context, cfg events.ServerConfig) *manager.ConnectResult {
	e.T.Helper()
	res := e.Connect(ctx, cfg)
	if err := res.Errors[cfg.Name]; err != nil {
		e.T.Fatalf("connect %s: %v", cfg.Name, err)
	}
	if st := e.Manager.Status(cfg.Name); st != projector.StatusConnected {
		e.T.Fatalf("%s is %s", cfg.Name, st)
	}
	return res
}

// call calls a tool and fails the test unless it returned a result
// without error.
func (e *env) call(ctx context.Context, server, original string, args any) *manager.CallResult {
	e.T.Helper()
	res, err := e.Tool(server, original).Call(ctx, args)
	if err != nil {
		e.T.Fatalf("call %s/%s: %v", server, original, err)
	}
	if res.Result.IsError {
		e.T.Fatalf("call %s/%s: error result %q", server, original, res.Text())
	}
	return res
}

// markerVar is set, with a value unique to the test, in the environment
// of every server a test launches, so the test can find every process the
// launch created (wrappers, npm, node) and check that none survives.
const markerVar = "MCPLIFE_PEER_TEST_MARKER"

func newMarker(t *testing.T) string {
	return fmt.Sprintf("%s-%d-%d", strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), os.Getpid(), time.Now().UnixNano())
}

// proc is a live process found by its marker.
type proc struct {
	PID, PGID int
	State     byte
	Cmdline   string
}

// markedProcesses returns the processes that run (are not zombies) with
// marker in their environment.
func markedProcesses(marker string) []proc {
	needle := []byte(markerVar + "=" + marker + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(environ, 0), needle) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			continue
		}
		f := bytes.Fields(stat[i+2:])
		if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		pgid, _ := strconv.Atoi(string(f[2]))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, proc{PID: pid, PGID: pgid, State: f[0][0], Cmdline: strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")})
	}
	return out
}

// waitGone waits until no process carries marker. Processes signalled by
// the teardown may take a moment to be reaped, so this polls, bounded.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left := markedProcesses(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after DisconnectAll: %+v", left)
		}
		<-tick.C
	}
}

// afterShortPause paces the bounded re-asking of an external process.
func afterShortPause() <-chan time.Time { return time.After(25 * time.Millisecond) }
