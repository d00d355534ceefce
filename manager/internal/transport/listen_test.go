package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
)

// TestOnListenEnd: a subscriptions/listen stream that ends before its
// response is reported once, with the body's error; one that ends with
// its response, one its client cancelled, and the streams of other
// requests are not.
func TestOnListenEnd(t *testing.T) {
	const (
		ack      = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\"}\n\n"
		changed  = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
		response = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	)
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		body := ack + changed
		switch r.URL.Query().Get("end") {
		case "complete":
			body += response
		case "hold":
			io.WriteString(w, body)
			w.(http.Flusher).Flush()
			<-hold
			return
		}
		io.WriteString(w, body)
	}))
	defer srv.Close()
	defer close(hold)

	var ended []error
	sse, err := New("old", events.ServerConfig{Name: "old", Type: "sse", URL: srv.URL}, Resolved{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if OnListenEnd(sse, func(err error) { ended = append(ended, err) }) {
		t.Fatal("OnListenEnd took a legacy SSE transport")
	}
	st, err := New("web", events.ServerConfig{Name: "web", Type: "http", URL: srv.URL}, Resolved{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer Pool(st).CloseIdleConnections()
	if !OnListenEnd(st, func(err error) { ended = append(ended, err) }) {
		t.Fatal("OnListenEnd refused a streamable HTTP transport")
	}
	sc, _ := Streamable(st)
	client := sc.HTTPClient // the transport's own: origin rule, depth check, listen watch

	// read posts a request of method and reads the stream that answers
	// it; with cancel, it cancels the request after the first event.
	read := func(ctx context.Context, end, method string, cancel context.CancelFunc) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"?end="+end, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Mcp-Method", method)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if cancel != nil {
			buf := make([]byte, len(ack))
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		io.Copy(io.Discard, resp.Body)
	}

	ctx := testCtx(t)
	read(ctx, "complete", "subscriptions/listen", nil)
	if len(ended) != 0 {
		t.Fatalf("a listen stream with its response reported: %v", ended)
	}
	read(ctx, "cut", "tools/call", nil)
	if len(ended) != 0 {
		t.Fatalf("another request's stream reported: %v", ended)
	}
	hctx, cancel := context.WithCancel(ctx)
	read(hctx, "hold", "subscriptions/listen", cancel)
	if len(ended) != 0 {
		t.Fatalf("a listen stream its client cancelled reported: %v", ended)
	}
	read(ctx, "cut", "subscriptions/listen", nil)
	if len(ended) != 1 || !errors.Is(ended[0], io.EOF) {
		t.Fatalf("a listen stream cut before its response: reported %v, want one io.EOF", ended)
	}
}
