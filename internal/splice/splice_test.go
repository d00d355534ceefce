package splice

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeConn is a connection whose reads come from in and whose writes go
// to out.
type fakeConn struct {
	in  chan jsonrpc.Message // closed: the connection ended
	out chan jsonrpc.Message
}

func (c *fakeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, ok := <-c.in
	if !ok {
		return nil, io.EOF
	}
	return m, nil
}
func (c *fakeConn) Write(_ context.Context, m jsonrpc.Message) error { c.out <- m; return nil }
func (c *fakeConn) Close() error                                     { return nil }
func (c *fakeConn) SessionID() string                                { return "" }

type fakeTransport struct{ c mcp.Connection }

func (t fakeTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

func request(t *testing.T, id int64, params string) *jsonrpc.Request {
	t.Helper()
	rid, _ := jsonrpc.MakeID(float64(id))
	return &jsonrpc.Request{ID: rid, Method: "tools/call", Params: json.RawMessage(params)}
}

// TestPoint sends a call through a point: the server sees the point's id
// and token, the caller its own; a request of another protocol version
// is refused; the end of the connection fails the call in flight and
// withdraws the point.
func TestPoint(t *testing.T) {
	fc := &fakeConn{in: make(chan jsonrpc.Message), out: make(chan jsonrpc.Message, 4)}
	tr, p := Wrap(fakeTransport{fc})
	conn, err := tr.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	reg.Publish("fx", p, "2026-07-28", func(tool string) bool { return tool == "renamed" }, nil)
	if reg.Point("fx") != p {
		t.Fatal("not published")
	}
	read := make(chan jsonrpc.Message, 4)
	go func() {
		for {
			m, err := conn.Read(context.Background())
			if err != nil {
				close(read)
				return
			}
			read <- m
		}
	}()
	done := func(*jsonrpc.Response, error) { t.Error("done of a refused call") }
	for _, params := range []string{
		`{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`,
		`{"name":"echo"}`, // no version of its own, none of the session's
		`{"name":"renamed","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	} {
		if _, err := p.Start(request(t, 1, params), "", done, nil); !errors.Is(err, ErrNotPassthrough) {
			t.Errorf("%s: %v, want ErrNotPassthrough", params, err)
		}
	}

	answers := make(chan *jsonrpc.Response, 1)
	progress := make(chan *jsonrpc.Request, 1)
	_, err = p.Start(request(t, 7, `{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":42}}`), "2026-07-28",
		func(r *jsonrpc.Response, err error) {
			if err != nil {
				t.Error(err)
			}
			answers <- r
		}, func(n *jsonrpc.Request) { progress <- n })
	if err != nil {
		t.Fatal(err)
	}
	sent := (<-fc.out).(*jsonrpc.Request)
	sid, _ := sent.ID.Raw().(string)
	var sp struct {
		Arguments map[string]string `json:"arguments"`
		Meta      map[string]any    `json:"_meta"`
	}
	if err := json.Unmarshal(sent.Params, &sp); err != nil {
		t.Fatal(err)
	}
	tok, _ := sp.Meta["progressToken"].(string)
	if !strings.HasPrefix(sid, prefix) || !strings.HasPrefix(tok, prefix) || sp.Arguments["text"] != "hi" {
		t.Fatalf("sent id %v params %s: want the point's id and token, the arguments as they were", sent.ID.Raw(), sent.Params)
	}
	// The manager's own traffic passes; the call's is taken out.
	own := &jsonrpc.Response{ID: jsonrpc2StringID("not-spliced"), Result: json.RawMessage(`{}`)}
	fc.in <- &jsonrpc.Request{Method: methodProgress, Params: json.RawMessage(`{"progressToken":"` + tok + `","progress":1}`)}
	fc.in <- &jsonrpc.Response{ID: sent.ID, Result: json.RawMessage(`{"content":[]}`)}
	fc.in <- own
	if n := <-progress; !strings.Contains(string(n.Params), `"progressToken":42`) {
		t.Errorf("progress to the caller: %s, want its token 42", n.Params)
	}
	if r := <-answers; r.ID.Raw() != int64(7) || string(r.Result) != `{"content":[]}` {
		t.Errorf("response to the caller: id %v %s", r.ID.Raw(), r.Result)
	}
	if m := <-read; m != own {
		t.Errorf("the manager's client read %+v, want its own response only", m)
	}

	// A call in flight when the connection ends fails.
	ended := make(chan error, 1)
	if _, err := p.Start(request(t, 8, `{"name":"echo"}`), "2026-07-28", func(r *jsonrpc.Response, err error) { ended <- err }, nil); err != nil {
		t.Fatal(err)
	}
	<-fc.out
	close(fc.in)
	if err := <-ended; !errors.Is(err, ErrEnded) {
		t.Errorf("call in flight at the end: %v, want ErrEnded", err)
	}
	if reg.Point("fx") != nil {
		t.Error("the point of an ended connection is still published")
	}
	if _, err := p.Start(request(t, 9, `{"name":"echo"}`), "2026-07-28", done, nil); !errors.Is(err, ErrEnded) {
		t.Errorf("start after the end: %v, want ErrEnded", err)
	}
}

// TestPlainResult takes the result of a spliced call's response out of
// the go-sdk's layout, and leaves any other line to the decoder.
func TestPlainResult(t *testing.T) {
	id, res, ok := plainResult([]byte(`{"jsonrpc":"2.0","id":"` + prefix + `12","result":{"content":[{"type":"text","text":"}"}]}}`))
	if !ok || id != prefix+"12" || string(res) != `{"content":[{"type":"text","text":"}"}]}` {
		t.Errorf("plain result: %q %s %v", id, res, ok)
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":"` + prefix + `12","error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":"` + prefix + `12","result":{},"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":"` + prefix + `t3","result":{}}`,
		`{"jsonrpc":"2.0","id":"other","result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"` + prefix + `t3"}}`,
	} {
		if _, _, ok := plainResult([]byte(line)); ok {
			t.Errorf("%s: taken as a plain result", line)
		}
	}
}

// heldConn is a connection whose writes wait for a value on release and
// fail with it; entered hears of each write.
type heldConn struct {
	fakeConn
	entered chan struct{}
	release chan error
}

func (c *heldConn) Write(context.Context, jsonrpc.Message) error {
	c.entered <- struct{}{}
	return <-c.release
}

// TestPointEndWhileWriting ends a connection while a call's request is
// being written: written, the call is cut off (done gets ErrEnded, once);
// not written, it was never made (Start fails, done is not called). The
// call cut off goes to the manager's rule: Again names its tool to it and
// returns the server's next point when the rule makes the call again.
func TestPointEndWhileWriting(t *testing.T) {
	for _, werr := range []error{nil, io.ErrClosedPipe} {
		hc := &heldConn{fakeConn: fakeConn{in: make(chan jsonrpc.Message)}, entered: make(chan struct{}), release: make(chan error)}
		tr, p := Wrap(fakeTransport{hc})
		conn, err := tr.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		reg := NewRegistry()
		next := make(chan *Point, 1)
		var asked []string
		reg.Publish("fx", p, "2026-07-28", nil, func(_ context.Context, tool string) bool {
			asked = append(asked, tool)
			if tool != "again" {
				return false
			}
			p2 := <-next
			reg.Publish("fx", p2, "2026-07-28", nil, nil)
			return true
		})
		ended := make(chan error, 2)
		type started struct {
			c   *Call
			err error
		}
		got := make(chan started, 1)
		req := request(t, 1, `{"name":"again"}`)
		go func() {
			c, err := p.Start(req, "2026-07-28", func(_ *jsonrpc.Response, err error) { ended <- err }, nil)
			got <- started{c, err}
		}()
		<-hc.entered
		conn.Close() // the connection ends under the write
		hc.release <- werr
		s := <-got
		if werr != nil {
			if s.c != nil || !errors.Is(s.err, ErrEnded) || len(ended) != 0 {
				t.Errorf("write failed: Start %v %v, done called %d times: want ErrEnded, no done", s.c, s.err, len(ended))
			}
			continue
		}
		if s.err != nil || len(ended) != 1 || !errors.Is(<-ended, ErrEnded) {
			t.Fatalf("written: Start %v, done %d: want a call, cut off once", s.err, len(ended))
		}
		if np := p.Again(t.Context(), request(t, 1, `{"name":"other"}`)); np != nil {
			t.Error("Again made a call the rule refused")
		}
		fc2 := &fakeConn{in: make(chan jsonrpc.Message), out: make(chan jsonrpc.Message, 1)}
		tr2, p2 := Wrap(fakeTransport{fc2})
		if _, err := tr2.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		next <- p2
		if np := p.Again(t.Context(), req); np != p2 {
			t.Errorf("Again: %p, want the next point %p", np, p2)
		}
		if strings.Join(asked, ",") != "other,again" {
			t.Errorf("the rule was asked about %q, want other,again", asked)
		}
	}
}
