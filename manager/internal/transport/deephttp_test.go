package transport

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// deepJSON returns a JSON value of n objects nested in each other.
func deepJSON(n int) string { return strings.Repeat(`{"x":`, n) + `"y"` + strings.Repeat("}", n) }

// getThroughDepth returns the body of a response with contentType and
// body as the client of server "deep" reads it.
func getThroughDepth(t *testing.T, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &depthTransport{base: http.DefaultTransport, server: "deep"}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := resp.Body
	if len(body) < 1<<20 {
		r = io.NopCloser(iotest.OneByteReader(resp.Body))
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

// tooDeepAnswer is the error response that takes the place of a too-deep
// result with id.
func tooDeepAnswer(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"MCP server \"deep\" sent a result nested too deep (more than 1000 levels of objects and arrays); it was discarded"}}`
}

// TestDepthTransportJSONBody: a JSON response nested deeper than the
// go-sdk decodes is replaced by an error response with its id; one within
// the bound, and a body of another type, pass as they are.
func TestDepthTransportJSONBody(t *testing.T) {
	deep := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"t","inputSchema":` + deepJSON(1500) + `}]}}` + "\n"
	if got := getThroughDepth(t, "application/json", deep); got != tooDeepAnswer("7") {
		t.Errorf("too deep: got %.300q", got)
	}
	ok := `{"jsonrpc":"2.0","id":"a","result":` + deepJSON(990) + `}`
	if got := getThroughDepth(t, "application/json; charset=utf-8", ok); got != ok {
		t.Errorf("within the bound: got %.300q", got)
	}
	if got := getThroughDepth(t, "text/plain", deep); got != deep {
		t.Errorf("text/plain: got %.300q", got)
	}
}

// TestDepthTransportEventStream: in an event stream, a message event
// nested too deep that answers a request is replaced by one data line of
// an error response with its id; a too-deep notification leaves its
// event without data (its id stays, for resuming); events within the
// bound, events of other names, comments and a last event without its
// blank line pass as they are.
func TestDepthTransportEventStream(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1,"result":` + deepJSON(990) + `}`
	deepResult := `{"jsonrpc":"2.0","id":2,"result":{"content":` + deepJSON(20000) + `}}`
	half := len(deepResult) / 2
	in := strings.Join([]string{
		": a comment",
		"",
		"event: endpoint",
		"data: /message?session=" + deepJSON(1) + "",
		"",
		"id: e1",
		"data: " + ok,
		"",
		"event: message",
		"id: e2",
		"data: " + deepResult[:half],
		"data: " + deepResult[half:],
		"",
		"id: e3",
		`data: {"jsonrpc":"2.0","method":"notifications/message","params":` + deepJSON(1500) + `}`,
		"",
		"id: e4\r",
		`data: {"jsonrpc":"2.0","id":"s","result":` + deepJSON(1500) + "}\r",
		"\r",
		"data: " + ok,
	}, "\n")
	want := strings.Join([]string{
		": a comment",
		"",
		"event: endpoint",
		"data: /message?session=" + deepJSON(1) + "",
		"",
		"id: e1",
		"data: " + ok,
		"",
		"event: message",
		"id: e2",
		"data: " + tooDeepAnswer("2"),
		"",
		"id: e3",
		"",
		"id: e4\r",
		"data: " + tooDeepAnswer(`"s"`),
		"\r",
		"data: " + ok,
	}, "\n")
	got := getThroughDepth(t, "text/event-stream", in)
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d: got %.200q, want %.200q", i, g, w)
			}
		}
	}
}

// TestDepthTransportPassesWhatItDoesNotHold: a JSON body or an event over
// the go-sdk's bound on one event is passed as it is, unchecked, for the
// go-sdk to bound: the rewriting holds no more than that.
func TestDepthTransportPassesWhatItDoesNotHold(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":3,"result":` + deepJSON(1500) + `,"text":"` + strings.Repeat("a", maxCheckedMessage) + `"}`
	if got := getThroughDepth(t, "application/json", big); got != big {
		t.Errorf("JSON body of %d bytes changed to %d bytes: %.100q", len(big), len(got), got)
	}
	stream := "id: 1\ndata: " + big + "\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":" + deepJSON(1500) + "}\n\n"
	if got := getThroughDepth(t, "text/event-stream", stream); got != stream {
		t.Errorf("event stream of %d bytes changed to %d bytes: %.100q", len(stream), len(got), got)
	}
}
