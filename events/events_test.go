package events

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEveryTypeRoundTrips(t *testing.T) {
	exit := 3
	all := []Event{
		&SessionStarted{Cwd: "/w", Gate: 250 * time.Millisecond, Options: map[string]string{"a": "b"}},
		&SessionClosed{Reason: "done"},
		&DiscoveryFailed{Path: ".mcp.json", Error: "boom"},
		&ServerDiscovered{Server: "s", Source: SourceMeta{Provider: "native", ProviderName: "mcplife", Path: "/p", Level: LevelUser}, Transport: TransportStdio, ConfigHash: "h", Config: ServerConfig{Command: "x"}},
		&ServerSkipped{Server: "s", Reason: SkipShadowed, Detail: "d"},
		&ServerInvalid{Server: "s", Error: "e"},
		&ConnectStarted{Server: "s", Transport: TransportHTTP, Attempt: 1, Round: 2},
		&ServerConnected{Server: "s", Pid: 10, Pgid: 10, StartTime: 99, PeerName: "p", PeerVersion: "1", ProtocolVersion: "2025-11-25", Capabilities: json.RawMessage(`{"tools":{}}`), Duration: time.Millisecond},
		&ConnectFailed{Server: "s", Error: "e", Duration: time.Second, TimedOut: true},
		&ToolsListed{Server: "s", ConfigHash: "h", Tools: []ToolDef{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`), Icons: json.RawMessage(`[{"src":"https://x/i.png"}]`)}}, ToolsHash: "x", Count: 1, Cause: CauseInitial},
		&ToolsListFailed{Server: "s", Error: "e"},
		&StartupGateElapsed{Round: 1, Gate: 250 * time.Millisecond, Elapsed: 251 * time.Millisecond, Outcomes: map[string]Outcome{"s": OutcomeReady}},
		&CachedToolsServed{Server: "s", Count: 1, CacheAge: time.Hour},
		&ToolListChanged{Server: "s"},
		&ToolCallStarted{Server: "s", Tool: "t", Name: "mcp_s_t"},
		&ToolCallFinished{Server: "s", Tool: "t", IsError: true, Error: "MCP error: x", Retried: true, OutputBytes: 300000, Truncated: true},
		&Disconnected{Server: "s", Reason: ReasonProcessExited, ExitStatus: &exit, Reconnecting: true},
		&ReloadRequested{Servers: 2},
		&ReloadCompleted{Servers: 2, Failed: 1, Tools: 3},
		&ToolsActivated{Tools: []string{"mcp_s_t", "mcp_s_u"}, By: ActivatedBySearch},
		&ReconnectScheduled{Server: "s", Attempt: 2, DelayMs: 512, Cause: "process exited"},
		&ReconnectGaveUp{Server: "s", Attempts: 5, LastError: "e"},
		&HostResumed{SleptMs: 3_600_000},
		&HostAttached{Server: "s-1a2b3c4d", Session: "host", Pid: 42},
		&HostDetached{Server: "s-1a2b3c4d", Session: "host", Pid: 42, Reason: DetachHostGone},
		&ConfigChanged{Paths: []string{"/p/.mcp.json"}, Added: []string{"a"}, Changed: []string{"c"}, Removed: []string{"r"}},
		&ProcessesSeen{Server: "s", Pids: []ProcessRef{{Pid: 10, StartTime: 99}}},
		&SessionAbandoned{Session: "old", DetectedBy: "new"},
		&OrphansReaped{Session: "old", Pids: []ProcessRef{{Pid: 10, StartTime: 99}}},
		&RecordingGap{From: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), To: time.Date(2026, 1, 2, 3, 4, 9, 0, time.UTC), Dropped: 1064},
		&ElicitationRequested{Server: "s", Mode: "form", Fields: 2},
		&ElicitationAnswered{Server: "s", Action: "accept", Fields: 2, Duration: time.Millisecond},
		&SamplingRequested{Server: "s", Messages: 1, MaxTokens: 100},
		&SamplingAnswered{Server: "s", Model: "m", StopReason: "endTurn", Duration: time.Millisecond},
		&ResourcesListed{Server: "s", ConfigHash: "h", Resources: []ResourceDef{{URI: "file:///a", Name: "a", Size: 3}},
			Templates: []ResourceTemplateDef{{URITemplate: "file:///{p}", Name: "p"}}, Hash: "x", Count: 1, Cause: CauseInitial},
		&PromptsListed{Server: "s", ConfigHash: "h", Prompts: []PromptDef{{Name: "p", Arguments: []PromptArgument{{Name: "a", Required: true}}}},
			Hash: "x", Count: 1, Cause: CauseListChanged},
		&ResourceUpdated{Server: "s", URI: "file:///a", Coalesced: 3},
		&ServerMessagesLimited{Server: "s", Declined: map[string]int{"elicitation/create": 2}, Ignored: map[string]int{"notifications/resources/updated": 5}},
		&ServerLog{Server: "s", Level: LogWarning, Logger: "db", Text: "slow query", Dropped: 3},
		&AuthRequired{Server: "s", Issuer: "https://as.example", Scopes: []string{"read"}, Login: "mcp-audit auth login s"},
		&AuthCompleted{Server: "s", Issuer: "https://as.example", Scopes: []string{"read"}, ExpiresAt: time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC), Grant: "authorization_code"},
		&AuthFailed{Server: "s", Error: "access_denied"},
		&ResourceRead{Server: "s", URI: "file:///a", Contents: 1, Duration: time.Millisecond},
		&PromptRetrieved{Server: "s", Prompt: "p", Messages: 2, Duration: time.Millisecond, Error: "boom"},
		&ServerEraDetected{Server: "s", ConfigHash: "h", Era: EraModern, ProtocolVersion: "2026-07-28",
			SupportedVersions: []string{"2026-07-28", "2025-11-25"}, TTLMs: 60000, CacheScope: "public",
			Discover: &DiscoverInfo{Capabilities: json.RawMessage(`{"tools":{}}`), PeerName: "p", PeerVersion: "1", Instructions: "use it"}},
	}
	if len(all) != len(Types()) {
		t.Fatalf("test covers %d types, catalogue has %d", len(all), len(Types()))
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, ev := range all {
		env, err := New("sess", ev, now)
		if err != nil {
			t.Fatalf("New(%s): %v", ev.Type(), err)
		}
		if env.Type != ev.Type() || env.Schema != 1 || env.SessionID != "sess" || env.Stream != "sess" {
			t.Errorf("envelope of %s = %+v", ev.Type(), env)
		}
		got, err := Decode(env)
		if err != nil {
			t.Fatalf("Decode(%s): %v", ev.Type(), err)
		}
		if diff := cmp.Diff(ev, got); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", ev.Type(), diff)
		}
	}
}

func TestUnknownTypeKeepsBytes(t *testing.T) {
	env := Envelope{Type: "FutureThing", Schema: 1, Data: json.RawMessage(`{"x":1}`)}
	got, err := Decode(env)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := got.(*Unknown)
	if !ok || u.Type() != "FutureThing" || string(u.Data) != `{"x":1}` {
		t.Fatalf("Decode = %#v", got)
	}
	// A newer schema of a known type is not guessed at either.
	env = Envelope{Type: TypeToolsListed, Schema: 99, Data: json.RawMessage(`{"new":true}`)}
	got, _ = Decode(env)
	if _, ok := got.(*Unknown); !ok {
		t.Fatalf("schema 99 decoded as %T", got)
	}
}

func TestDecodeMalformedKnownTypeFails(t *testing.T) {
	_, err := Decode(Envelope{Type: TypeConnectStarted, Schema: 1, Seq: 7, Data: json.RawMessage(`{"server":`)})
	if err == nil || !strings.Contains(err.Error(), "ConnectStarted") || !strings.Contains(err.Error(), "seq 7") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigHash(t *testing.T) {
	a := ServerConfig{Name: "a", Command: "x", Env: map[string]string{"B": "2", "A": "1"}, Headers: map[string]string{}}
	b := ServerConfig{Name: "b", Command: "x", Env: map[string]string{"A": "1", "B": "2"}}
	if a.Hash() != b.Hash() {
		t.Error("hash depends on map order, name or empty maps")
	}
	c := b.Clone()
	c.Env["A"] = "changed"
	if c.Hash() == b.Hash() {
		t.Error("hash ignores env values")
	}
	if len(a.Hash()) != 64 {
		t.Errorf("hash %q is not hex sha-256", a.Hash())
	}
}

func TestRedact(t *testing.T) {
	c := ServerConfig{
		Command: "npx",
		Args:    []string{"server", "--api-key=sk-live-1", "https://mcp.exa.ai/mcp?exaApiKey=abc&mode=x", "plain"},
		Env:     map[string]string{"HOME_DIR": "/home/u", "TOKEN": "!pass show x"},
		URL:     "https://u:pw@example.com/mcp?token=t0k&x=1&Api_Key=k",
		Headers: map[string]string{"Authorization": "Bearer s3cr3t", "X-Trace": "on"},
	}
	r := c.Redact()
	blob, _ := json.Marshal(r)
	for _, secret := range []string{"sk-live-1", "abc", "/home/u", "pass show", "pw@", "t0k", "s3cr3t", "=k", `"X-Trace":"on"`} {
		if strings.Contains(string(blob), secret) {
			t.Errorf("redacted config still holds %q: %s", secret, blob)
		}
	}
	for _, kept := range []string{"mode=x", "x=1", "plain", "example.com/mcp"} {
		if !strings.Contains(string(blob), kept) {
			t.Errorf("redaction lost %q: %s", kept, blob)
		}
	}
	if c.Env["TOKEN"] != "!pass show x" || c.Headers["Authorization"] != "Bearer s3cr3t" {
		t.Error("Redact modified its receiver")
	}
}

func TestTransportInference(t *testing.T) {
	for _, tc := range []struct {
		c    ServerConfig
		want string
	}{
		{ServerConfig{Command: "x"}, TransportStdio},
		{ServerConfig{URL: "http://x"}, TransportHTTP},
		{ServerConfig{Type: "sse", URL: "http://x"}, TransportSSE},
		{ServerConfig{Type: "streamable-http", URL: "http://x"}, TransportHTTP},
		{ServerConfig{Type: "streamableHttp", URL: "http://x"}, TransportHTTP},
		{ServerConfig{}, TransportStdio},
	} {
		if got := tc.c.Transport(); got != tc.want {
			t.Errorf("%+v: Transport() = %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestRedactText(t *testing.T) {
	in := `Post "https://h/mcp?key=abc123&page=2": dial tcp`
	got := RedactText(in)
	if strings.Contains(got, "abc123") || !strings.Contains(got, "page=2") {
		t.Errorf("RedactText = %q", got)
	}
}

func TestRedactArgs(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"--api-key", "sk-live-ARGsecret5555", "--verbose"}, []string{"--api-key", Redacted, "--verbose"}},
		{[]string{"--token", "t0k3n-value", "-p", "3000"}, []string{"--token", Redacted, "-p", "3000"}},
		{[]string{"--password", "hunter2", "--client-secret", "s3cr3t"}, []string{"--password", Redacted, "--client-secret", Redacted}},
		{[]string{"--token=ghp_ARGeqsecret6666"}, []string{"--token=" + Redacted}},
		{[]string{"--no-auth", "--port", "80"}, []string{"--no-auth", "--port", "80"}}, // a flag after a flag is a flag
		{[]string{"--api-key", "${API_KEY}"}, []string{"--api-key", "${API_KEY}"}},     // a reference names the secret
		{[]string{"-H", "Authorization: Bearer hdrARGsecret7777"}, []string{"-H", "Authorization: " + Redacted}},
		{[]string{"--header", "X-Api-Key: abc123def"}, []string{"--header", "X-Api-Key: " + Redacted}},
		{[]string{"Authorization: Bearer hdrARGsecret7777"}, []string{"Authorization: " + Redacted}},
		{[]string{"--header", "Authorization: Bearer ${TOKEN}"}, []string{"--header", "Authorization: Bearer ${TOKEN}"}},
		{[]string{"-H", "Accept: text/event-stream"}, []string{"-H", "Accept: text/event-stream"}},
		{[]string{"Bearer abcdef123"}, []string{"Bearer " + Redacted}},
		{[]string{"https://mcp.example.invalid/s/PATHsecret8888/mcp"}, []string{"https://mcp.example.invalid/s/" + Redacted + "/mcp"}},
		{[]string{"server", "stdio", "/tmp/data", "--mode", "fast", "mcp-server-v2"}, []string{"server", "stdio", "/tmp/data", "--mode", "fast", "mcp-server-v2"}},
		// A --flag=value whose value is a header line or a name=value pair.
		{[]string{"--header=X-Api-Key: hdrEQsecret1234"}, []string{"--header=X-Api-Key: " + Redacted}},
		{[]string{"--header=Authorization:Token hdrEQsecret1234"}, []string{"--header=Authorization: " + Redacted}},
		{[]string{"--env=GITHUB_TOKEN=ghp_ENVeqsecret1234"}, []string{"--env=GITHUB_TOKEN=" + Redacted}},
		{[]string{"--header=Authorization: Bearer ${TOKEN}", "--mode=fast"}, []string{"--header=Authorization: Bearer ${TOKEN}", "--mode=fast"}},
		// A connection string's pairs are separated by ";".
		{[]string{"--connection-string", "Server=db;Password=CONNsecret1234;"}, []string{"--connection-string", Redacted}},
		{[]string{"--db", "Server=db;User Id=sa;Password=CONNsecret1234;Encrypt=true"}, []string{"--db", "Server=db;User Id=sa;Password=" + Redacted + ";Encrypt=true"}},
		{nil, nil},
	} {
		if got := RedactArgs(c.in); !slices.Equal(got, c.want) {
			t.Errorf("RedactArgs(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestRedactURLPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://mcp.example.invalid/s/PATHsecret8888/mcp", "https://mcp.example.invalid/s/" + Redacted + "/mcp"},
		{"https://h/mcp/123e4567-e89b-12d3-a456-426614174000/sse?mode=x", "https://h/mcp/" + Redacted + "/sse?mode=x"},
		{"https://h/s/PATHsecret8888/mcp?token=t0k", "https://h/s/" + Redacted + "/mcp?token=" + Redacted},
		{"https://u:pw@h/v1/mcp", "https://" + Redacted + "@h/v1/mcp"},
		{"https://h/v1/mcp", "https://h/v1/mcp"},
		{"https://h/sse", "https://h/sse"},
		{"https://h/2025-06-18/mcp-server-v2/mcp", "https://h/2025-06-18/mcp-server-v2/mcp"},
		{"https://h/s/${SECRET_PATH_1}/mcp", "https://h/s/${SECRET_PATH_1}/mcp"},
		{"https://h:8443", "https://h:8443"},
		{"file:///home/u/report2024q3final.txt", "file:///home/u/report2024q3final.txt"}, // no host: a file name, not a credential
		{"https://h/mcp#access_token=FRAGsecret1234&x=1", "https://h/mcp#access_token=" + Redacted + "&x=1"},
		{"https://h/mcp#section-2", "https://h/mcp#section-2"},
	} {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	in := `Post "https://mcp.example.invalid/s/PATHsecret8888/mcp": dial tcp: lookup mcp.example.invalid: no such host`
	if got := RedactText(in); strings.Contains(got, "PATHsecret8888") || !strings.Contains(got, "/s/"+Redacted+"/mcp") {
		t.Errorf("RedactText = %q", got)
	}
}

func TestArgSecrets(t *testing.T) {
	got := ArgSecrets([]string{"x", "--api-key", "sk-live-1", "--token=t0k", "-H", "Authorization: Bearer b3ar", "--key", "${K}",
		"https://h1234abcd5678.example/s/PATHsecret8888/mcp?mode=fast",
		"--header=X-Api-Key: hdr3q", "--env=GITHUB_TOKEN=gh3q", "Server=db;Password=pw3q;"})
	want := []string{"sk-live-1", "t0k", "Bearer b3ar", "b3ar", "PATHsecret8888", "hdr3q", "gh3q", "pw3q"}
	if !slices.Equal(got, want) {
		t.Errorf("ArgSecrets = %q, want %q", got, want)
	}
}

// TestDisconnectReasonChosen: the reasons a session chooses (no
// reconnect follows, no fault) against those of a connection that ended
// on its own.
func TestDisconnectReasonChosen(t *testing.T) {
	for r, want := range map[DisconnectReason]bool{
		ReasonRequested: true, ReasonReload: true, ReasonConfigChanged: true, ReasonIdle: true,
		ReasonTransportClosed: false, ReasonProcessExited: false, ReasonError: false, ReasonUnresponsive: false, "": false,
	} {
		if got := r.Chosen(); got != want {
			t.Errorf("%q.Chosen() = %v, want %v", r, got, want)
		}
	}
}
