package oauth_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/oauth"
)

// helperEnv makes the test binary a process sharing a token store with
// the test (see [helperArgs]).
const helperEnv = "MCPLIFE_OAUTH_HELPER"

// helperArgs is what a helper process does, after it printed "ready" and
// read a line from its stdin (so that the test starts every helper at
// the same moment): "save" saves N entries of servers named by Prefix;
// "refresh" connects to URL with the token stored for it (loaded before
// "ready") and calls the tool "read", printing its text; "hold" keeps the
// store locked (inside an Update) until it is killed, printing "locked".
type helperArgs struct {
	Mode, Store, Prefix, URL string
	N                        int
}

func TestMain(m *testing.M) {
	if v := os.Getenv(helperEnv); v != "" {
		var args helperArgs
		if err := json.Unmarshal([]byte(v), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := helper(args); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helper(args helperArgs) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := oauth.NewFileStore(args.Store)
	waitForGo := func() error {
		fmt.Println("ready")
		_, err := bufio.NewReader(os.Stdin).ReadString('\n')
		return err
	}
	switch args.Mode {
	case "save":
		if err := waitForGo(); err != nil {
			return err
		}
		for i := range args.N {
			if err := st.Save(ctx, manyEntry(args.Prefix, i)); err != nil {
				return err
			}
		}
		return nil
	case "refresh":
		a, err := oauth.New(&oauth.Options{Store: st})
		if err != nil {
			return err
		}
		h := a.Handler("tracker", events.ServerConfig{Name: "tracker", Type: events.TransportHTTP, URL: args.URL}, nil)
		if ts, err := h.TokenSource(ctx); err != nil || ts == nil {
			return fmt.Errorf("no stored token: %v", err)
		}
		if err := waitForGo(); err != nil {
			return err
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "helper", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: args.URL, OAuthHandler: h, MaxRetries: -1}, nil)
		if err != nil {
			if errors.As(err, new(*oauth.NeedsAuthError)) {
				return fmt.Errorf("needs-auth: %w", err)
			}
			return err
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{}})
		if err != nil {
			return err
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text)
		return nil
	case "hold":
		// Asserted rather than called, so that this helper builds
		// against any file store and reports one it cannot hold.
		u, ok := any(st).(interface {
			Update(context.Context, string, string, func(*oauth.Entry) (*oauth.Entry, error)) error
		})
		if !ok {
			return errors.New("the file store cannot be held: it has no Update")
		}
		return u.Update(ctx, args.URL, "https://as.example", func(*oauth.Entry) (*oauth.Entry, error) {
			fmt.Println("locked")
			io.ReadAll(os.Stdin) // the test never closes it: until killed
			return nil, errors.New("stdin closed")
		})
	}
	return fmt.Errorf("unknown mode %q", args.Mode)
}

// manyEntry is entry i of the servers named prefix.
func manyEntry(prefix string, i int) *oauth.Entry {
	return &oauth.Entry{
		ServerURL: fmt.Sprintf("https://%s-%d.example/mcp", prefix, i), Issuer: "https://as.example",
		Token:   oauth.Token{AccessToken: fmt.Sprintf("at-%s-%d", prefix, i), RefreshToken: fmt.Sprintf("rt-%s-%d", prefix, i)},
		SavedAt: time.Now(),
	}
}

// helperProc is a running helper process.
type helperProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	lines []string // what it printed after "ready"
}

// startHelper starts a helper and waits until it prints want ("ready" or
// "locked").
func startHelper(t *testing.T, args helperArgs, want string) *helperProc {
	t.Helper()
	b, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &helperProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := p.out.ReadString('\n')
	if strings.TrimSpace(line) != want {
		t.Fatalf("helper %s printed %q (%v), want %q", args.Mode, line, err, want)
	}
	return p
}

// runAtOnce releases every helper at the same moment and waits for all
// of them; a helper that fails fails the test, naming what it printed.
func runAtOnce(t *testing.T, ps []*helperProc) {
	t.Helper()
	for _, p := range ps {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range ps {
		rest, _ := io.ReadAll(p.out)
		p.lines = strings.Split(strings.TrimSpace(string(rest)), "\n")
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("helper %d: %v: %s", i, err, rest)
		}
	}
}

// TestFileStoreSavesOfProcessesAtOnce: several processes saving distinct
// entries into one store at the same time lose none of them.
func TestFileStoreSavesOfProcessesAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcplife", "oauth.json")
	const procs, each = 4, 30
	var ps []*helperProc
	for i := range procs {
		ps = append(ps, startHelper(t, helperArgs{Mode: "save", Store: path, Prefix: fmt.Sprint("p", i), N: each}, "ready"))
	}
	runAtOnce(t, ps)
	got, err := oauth.NewFileStore(path).List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range got {
		have[e.ServerURL] = true
	}
	var lost []string
	for i := range procs {
		for j := range each {
			if u := manyEntry(fmt.Sprint("p", i), j).ServerURL; !have[u] {
				lost = append(lost, u)
			}
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d entries survived; lost %d, e.g. %s", len(got), procs*each, len(lost), lost[0])
	}
	checkStoreFiles(t, path)
}

// checkStoreFiles fails unless the store's directory is 0700 and holds
// the store and its lock file, both 0600, and no temporary file.
func checkStoreFiles(t *testing.T, path string) {
	t.Helper()
	if fi, err := os.Stat(filepath.Dir(path)); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o700 {
		t.Errorf("the store's directory has mode %v, want 0700", fi.Mode().Perm())
	}
	des, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
		fi, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", de.Name(), fi.Mode().Perm())
		}
	}
	if want := []string{"oauth.json", "oauth.json.lock"}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("the store's directory holds %v, want %v", names, want)
	}
}

// TestFileStoreLockAcrossProcesses: while another process changes the
// store, a change here waits for it (with its context ended, it gives up
// at once); a process killed while holding the lock leaves the store
// unlocked and whole.
func TestFileStoreLockAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcplife", "oauth.json")
	st := oauth.NewFileStore(path)
	if err := st.Save(t.Context(), manyEntry("before", 0)); err != nil {
		t.Fatal(err)
	}
	p := startHelper(t, helperArgs{Mode: "hold", Store: path, URL: "https://held.example/mcp"}, "locked")
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if err := st.Save(ended, manyEntry("while-held", 0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Save while another process holds the store's lock = %v, want it to give up with the context", err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	if err := st.Save(t.Context(), manyEntry("after", 0)); err != nil {
		t.Fatalf("Save after the holder was killed: %v", err)
	}
	got, err := st.List(t.Context())
	if err != nil || len(got) != 2 {
		t.Fatalf("List = %d entries, %v; want before and after", len(got), err)
	}
	checkStoreFiles(t, path)
}

// TestFileStoreReadersSeeWholeFiles: a reader never sees a partly
// written store while another process keeps rewriting it.
func TestFileStoreReadersSeeWholeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcplife", "oauth.json")
	st := oauth.NewFileStore(path)
	if err := st.Save(t.Context(), manyEntry("first", 0)); err != nil {
		t.Fatal(err)
	}
	p := startHelper(t, helperArgs{Mode: "save", Store: path, Prefix: "w", N: 150}, "ready")
	done := make(chan error, 1)
	go func() {
		_, err := io.WriteString(p.stdin, "go\n")
		if err == nil {
			_, err = io.ReadAll(p.out)
		}
		if werr := p.cmd.Wait(); err == nil {
			err = werr
		}
		done <- err
	}()
	reads := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writer: %v", err)
			}
			if reads == 0 {
				t.Fatal("no read ran while the writer wrote")
			}
			t.Logf("%d reads while the other process saved 150 entries", reads)
			return
		default:
		}
		b, err := os.ReadFile(path)
		if err != nil || !json.Valid(b) {
			t.Fatalf("read %d: %d bytes, %v: not a whole store", reads, len(b), err)
		}
		if _, err := st.Load(t.Context(), manyEntry("first", 0).ServerURL); err != nil {
			t.Fatalf("Load during the writes: %v", err)
		}
		reads++
	}
}
