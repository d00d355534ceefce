package natsbus_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/natsbus"
	"github.com/mcplife/mcplife/natsbus/natstest"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
	"github.com/mcplife/mcplife/store/sqlite"
)

// followerEnv makes the test binary a follower process of
// TestTwoStoresOneTopic: "kind target bus topic n", kind "sqlite" (target a
// file) or "postgres" (target a connection string).
const followerEnv = "MCPLIFE_NATSBUS_FOLLOWER"

// follower opens the store read-only, as `mcp-audit replay --follow` does,
// follows it through the bus from its first event, prints "ready" once it
// is subscribed, then one line per envelope ("seq stream data") until it
// has printed n.
func follower(args string) error {
	var kind, target, bus, topic string
	var n int
	if _, err := fmt.Sscan(args, &kind, &target, &bus, &topic, &n); err != nil {
		return err
	}
	ctx := context.Background()
	var st store.Store
	var err error
	switch kind {
	case "sqlite":
		st, err = sqlite.Open(target, &sqlite.Options{ReadOnly: true})
	case "postgres":
		st, err = postgres.Open(ctx, target, &postgres.Options{ReadOnly: true})
	default:
		err = fmt.Errorf("unknown store kind %q", kind)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	// No periodic look at the store: what the follower gets, the bus
	// brought (or told it to read).
	b, err := natsbus.Open(bus, &natsbus.Options{CheckEvery: -1})
	if err != nil {
		return err
	}
	defer b.Close()
	j, err := journal.New(st, &journal.Options{Publisher: b, Subscriber: b, Topic: topic})
	if err != nil {
		return err
	}
	defer j.Close()
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{FromSeq: 1})
	if err != nil {
		return err
	}
	defer sub.Close()
	fmt.Println("ready")
	for range n {
		env, ok := <-sub.C()
		if !ok {
			return fmt.Errorf("subscription ended: %v", sub.Err())
		}
		fmt.Println(env.Seq, env.Stream, string(env.Data))
	}
	return nil
}

// startFollower starts a follower process of the store and returns its
// output once it is subscribed.
func startFollower(t *testing.T, kind, target, bus, topic string, n int) (*bufio.Scanner, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), followerEnv+"="+fmt.Sprint(kind, " ", target, " ", bus, " ", topic, " ", n))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 1<<20)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("follower of %s: %q, %v", target, lines.Text(), lines.Err())
	}
	return lines, cmd
}

// readLines returns n lines of a follower, failing t when they do not come
// within a generous deadline (the follower hangs on a lost event).
func readLines(t *testing.T, what string, lines *bufio.Scanner, n int) []string {
	t.Helper()
	got := make(chan []string, 1)
	go func() {
		var out []string
		for len(out) < n && lines.Scan() {
			out = append(out, lines.Text())
		}
		got <- out
	}()
	select {
	case out := <-got:
		return out
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: fewer than %d events in 2 minutes", what, n)
		return nil
	}
}

// Two stores with one NATS topic (two hosts with their default SQLite
// files and MCPLIFE_BUS exported, two fleets' databases on one NATS) hand
// out the same sequence numbers. Each store, followed from another
// process, delivers every one of its own events, once and in order, and
// none of the other store's.
func TestTwoStoresOneTopic(t *testing.T) {
	url := natstest.URL(t)
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		testTwoStores(t, url, "sqlite", func(name string) (store.Store, string) {
			path := filepath.Join(dir, name+".db")
			st, err := sqlite.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st, path
		})
	})
	t.Run("copied sqlite file", func(t *testing.T) {
		// b.db is a copy of a.db made before either recorded anything
		// (a file every user starts from): both hand out sequences from 1.
		dir := t.TempDir()
		testTwoStores(t, url, "sqlite", func(name string) (store.Store, string) {
			path := filepath.Join(dir, name+".db")
			if name == "a" {
				st, err := sqlite.Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "b.db"), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			st, err := sqlite.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st, path
		})
	})
	t.Run("postgres", func(t *testing.T) {
		testTwoStores(t, url, "postgres", func(string) (store.Store, string) {
			// A database of its own with the default schema, as two
			// fleets' databases are.
			conn := pgtest.Database(t)
			st, err := postgres.Open(t.Context(), conn, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st, conn
		})
	})
}

func testTwoStores(t *testing.T, url, kind string, open func(name string) (store.Store, string)) {
	topic := natstest.Topic()
	dropStream(t, url, topic)
	const n = 200
	type side struct {
		name   string
		j      *journal.Journal
		target string
		lines  *bufio.Scanner
		cmd    *exec.Cmd
	}
	var sides []*side
	for _, name := range []string{"a", "b"} {
		st, target := open(name)
		t.Cleanup(func() { st.Close() })
		sides = append(sides, &side{name: name, j: host(t, st, url, topic, "h-"+name), target: target})
	}
	for _, s := range sides {
		s.lines, s.cmd = startFollower(t, kind, s.target, url, topic, n)
	}
	var wg sync.WaitGroup
	for _, s := range sides {
		wg.Go(func() {
			for i := range n {
				if _, err := s.j.Append(t.Context(), "session-"+s.name, toolsListed(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, s := range sides {
		got := readLines(t, "follower of store "+s.name, s.lines, n)
		for i, line := range got {
			f := strings.SplitN(line, " ", 3)
			want := []string{fmt.Sprint(i + 1), "session-" + s.name, fmt.Sprintf(`"server":"s%d"`, i)}
			if len(f) != 3 || f[0] != want[0] || f[1] != want[1] || !strings.Contains(f[2], want[2]) {
				t.Fatalf("follower of store %s: event %d reads %q, want seq %s of stream %s, server s%d", s.name, i+1, line, want[0], want[1], i)
			}
		}
		if err := s.cmd.Wait(); err != nil {
			t.Errorf("follower of store %s: %v", s.name, err)
		}
	}
}
