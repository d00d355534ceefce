package shared

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeHost serves a control stream that stays open, the given attach
// handler and the stream of instance "fx-1": an MCP server with an echo
// tool.
func fakeHost(t *testing.T, attach http.HandlerFunc) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "run", SocketName)
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathHosts, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		json.NewEncoder(w).Encode(Welcome{Host: "h1"})
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("POST "+PathHosts+"/h1"+PathAttach, attach)
	mux.HandleFunc("POST "+Stream("fx-1"), func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+StreamProtocol+"\r\n\r\n")
		ss, err := srv.Connect(context.Background(), &mcp.IOTransport{Reader: io.NopCloser(brw.Reader), Writer: conn}, nil)
		if err == nil {
			ss.Wait()
		}
	})
	hs := &http.Server{Handler: mux}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return sock
}

// TestAttachStreamOpensTheStreamOfAnOlderSharedHost: a shared host that
// answers an attach asking for the upgrade with a plain 200 gets the
// stream opened on its own, which works as ever.
func TestAttachStreamOpensTheStreamOfAnOlderSharedHost(t *testing.T) {
	var asked atomic.Bool
	sock := fakeHost(t, func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.Header.Get("Upgrade") == StreamProtocol)
		io.Copy(io.Discard, r.Body)
		json.NewEncoder(w).Encode(Attached{Instance: "fx-1", Endpoint: Endpoint("fx-1")})
	})
	c, err := Dial(testCtx(t), sock, Hello{Session: "s", Pid: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	att, tr, err := c.AttachStream(testCtx(t), Attach{Name: "fx", Command: "fx"})
	if err != nil {
		t.Fatal(err)
	}
	if !asked.Load() || att.Instance != "fx-1" || att.Answers != nil {
		t.Fatalf("attach: upgrade asked %v, answer %+v", asked.Load(), att)
	}
	if Answering(tr) != nil {
		t.Error("an answer without answers answers requests")
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(testCtx(t), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("echo: %v %+v", err, res)
	}
}

// TestAttachStreamServerFailed: an attach whose server could not start
// fails with ErrServerFailed and the shared host's reason.
func TestAttachStreamServerFailed(t *testing.T) {
	sock := fakeHost(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		json.NewEncoder(w).Encode(Failure{Error: "exec: no such file"})
	})
	c, err := Dial(testCtx(t), sock, Hello{Session: "s", Pid: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, tr, err := c.AttachStream(testCtx(t), Attach{Name: "fx", Command: "fx"})
	if !errors.Is(err, ErrServerFailed) || tr != nil {
		t.Fatalf("attach: %v (transport %v), want ErrServerFailed", err, tr)
	}
	if want := "exec: no such file"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}
