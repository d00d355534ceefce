//go:build cgo && unix

package journal_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/sqlite"
	"github.com/mcplife/mcplife/verify"
)

// Environment of the process TestDeferredCallWriter becomes.
const callWriterDBEnv = "MCPLIFE_JOURNAL_TEST_CALL_WRITER_DB"

// TestDeferredCallWriter is not a test: run as a child process with
// callWriterDBEnv set, it is an agent recording tool calls as the manager
// does (ToolCallStarted and ToolCallFinished deferred, a call every 100 µs)
// until it is killed, printing "i unixnanos" once call i's events are
// queued. Otherwise it does nothing.
func TestDeferredCallWriter(t *testing.T) {
	path := os.Getenv(callWriterDBEnv)
	if path == "" {
		return
	}
	db, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := j.Append(ctx, "calls",
		&events.ServerDiscovered{Server: "s", Transport: "stdio", Config: events.ServerConfig{Name: "s", Command: "s"}},
		&events.ConnectStarted{Server: "s", Transport: "stdio", Attempt: 1, Round: 1},
		&events.ServerConnected{Server: "s"}); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		id := "call-" + strconv.Itoa(i)
		if err := j.AppendDeferred(ctx, "calls", id, nil, &events.ToolCallStarted{Server: "s", Tool: "echo", Name: "mcp_s_echo"}); err != nil {
			t.Fatal(err)
		}
		if err := j.AppendDeferred(ctx, "calls", id, nil, &events.ToolCallFinished{Server: "s", Tool: "echo", Duration: 100 * time.Microsecond}); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "%d %d\n", i, time.Now().UnixNano())
		out.Flush()
		time.Sleep(100 * time.Microsecond) // the call itself, as a workload
	}
}

// A process recording tool calls is killed with SIGKILL: what is stored is
// a prefix of what it recorded (every stored ToolCallFinished has its
// ToolCallStarted, and verify passes on the crashed session), and what is
// lost is the last few milliseconds of calls, which the test logs.
func TestDeferredCallsSurviveKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeferredCallWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), callWriterDBEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	queued := map[int]int64{} // call → when its events were queued
	last := -1
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		i, at, ok := parseQueued(sc.Text())
		if !ok {
			continue
		}
		queued[i], last = at, i
		if i == 3000 {
			cmd.Process.Kill()
			break
		}
	}
	for sc.Scan() { // lines written before the kill landed
		if i, at, ok := parseQueued(sc.Text()); ok {
			queued[i], last = at, i
		}
	}
	cmd.Wait()
	if last < 3000 {
		t.Fatalf("the writer stopped after call %d: %v", last, sc.Err())
	}

	db, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var history []events.Envelope
	for env, err := range db.ReadStream(context.Background(), "calls", 1) {
		if err != nil {
			t.Fatal(err)
		}
		history = append(history, env)
	}
	for _, v := range verify.Session("calls", history) {
		t.Errorf("invariant broken after the kill: %s", v)
	}
	// The calls' events form a prefix: started and finished in turn, call
	// by call, the last one possibly without its finish.
	calls := history[3:]
	for k, env := range calls {
		want := fmt.Sprintf("call-%d", k/2)
		typ := events.TypeToolCallStarted
		if k%2 == 1 {
			typ = events.TypeToolCallFinished
		}
		if env.CorrelationID != want || env.Type != typ {
			t.Fatalf("event %d after the connect is %s %s, want %s %s", k, env.Type, env.CorrelationID, typ, want)
		}
	}
	stored := len(calls)/2 - 1 // last call stored whole
	lostCalls := last - stored
	window := time.Duration(queued[last] - queued[max(stored, 0)])
	t.Logf("killed after queuing call %d; stored through call %d: lost %d calls, the last %v of recording", last, stored, lostCalls, window)
}

func parseQueued(line string) (i int, at int64, ok bool) {
	a, b, found := strings.Cut(line, " ")
	if !found {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(a)
	at, err2 := strconv.ParseInt(b, 10, 64)
	return i, at, err1 == nil && err2 == nil
}
