package events

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestValidateMessages(t *testing.T) {
	ms := func(v int64) *int64 { return &v }
	tests := []struct {
		cfg  ServerConfig
		want string
	}{
		{ServerConfig{Name: "a", Command: "x"}, ""},
		{ServerConfig{Name: "a", URL: "http://x"}, ""},
		{ServerConfig{Name: "a:b.c-d_e", Type: "streamableHttp", URL: "http://x"}, ""},
		{ServerConfig{Name: "a", Type: "sse", URL: "https://${HOST}/sse"}, ""},                                     // checked once expanded
		{ServerConfig{Name: "a", Command: "x", TimeoutMs: ms(0), ToolTimeoutMs: ms(0), MaxOutputBytes: ms(0)}, ""}, // no limits
		{ServerConfig{Name: "a", Command: "x", TimeoutMs: ms(-1)}, `Server "a": "timeout" must not be negative`},
		{ServerConfig{Name: "a", Command: "x", ToolTimeoutMs: ms(-1)}, `Server "a": "toolTimeoutMs" must not be negative`},
		{ServerConfig{Name: "a", Command: "x", MaxOutputBytes: ms(-1)}, `Server "a": "maxOutputBytes" must not be negative`},
		{ServerConfig{Name: "a b", TimeoutMs: ms(-1), MaxOutputBytes: ms(-2)},
			`Server "a b": invalid server name (must match ^[A-Za-z0-9_.:-]{1,100}$); ` +
				`Server "a b": stdio server requires "command" field; ` +
				`Server "a b": "timeout" must not be negative; ` +
				`Server "a b": "maxOutputBytes" must not be negative`},
		{ServerConfig{Name: "a"}, `Server "a": stdio server requires "command" field`},
		{ServerConfig{Name: "a", Type: "stdio", URL: "http://x"}, `Server "a": stdio server requires "command" field`},
		{ServerConfig{Name: "a", Type: "sse"}, `Server "a": sse server requires "url" field`},
		{ServerConfig{Name: "a", Type: "http", Command: "x"}, `Server "a": http server requires "url" field`},
		{ServerConfig{Name: "a", Type: "ws", URL: "ws://h"}, `Server "a": unknown server type "ws"`},
		{ServerConfig{Name: "a", Type: "http", URL: "ftp://h/?token=t"}, `Server "a": "url" "ftp://h/?token=<redacted>" must start with http:// or https://`},
		{ServerConfig{Name: "a", URL: "http:///mcp"}, `Server "a": "url" "http:///mcp" has no host`},
		{ServerConfig{Name: "a", URL: "http://h/%zz"}, `Server "a": "url" "http://h/%zz" is not a valid URL`},
		{ServerConfig{Name: strings.Repeat("x", 101), Command: "x"}, `Server "` + strings.Repeat("x", 101) + `": invalid server name (must match ^[A-Za-z0-9_.:-]{1,100}$)`},
		{ServerConfig{Name: "bad/name", Type: "sse", Command: "x", URL: "http://x"},
			`Server "bad/name": invalid server name (must match ^[A-Za-z0-9_.:-]{1,100}$); ` +
				`Server "bad/name": both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		got := ""
		if err != nil {
			got = err.Error()
			if _, ok := errors.AsType[*ConfigError](err); !ok {
				t.Errorf("Validate(%+v) returned %T, want *ConfigError", tt.cfg, err)
			}
		}
		if got != tt.want {
			t.Errorf("Validate(%+v)\n got %q\nwant %q", tt.cfg, got, tt.want)
		}
	}
}

func TestValidServerNameMatchesThePattern(t *testing.T) {
	for _, name := range []string{"", "a", "A-b_c.d:e", strings.Repeat("x", 100), strings.Repeat("x", 101), "a b", "a/b", "é", "a\n"} {
		want := serverNameRE.MatchString(name)
		if got := ValidServerName(name); got != want {
			t.Errorf("ValidServerName(%q) = %v, want %v", name, got, want)
		}
	}
}

var serverNameRE = regexp.MustCompile(ServerNamePattern)

// AlwaysLoad is left out of the canonical JSON when false, so every
// configuration recorded before it existed keeps its hash (the tool
// cache's key, and the golden streams' configHash).
func TestAlwaysLoadFalseKeepsTheHash(t *testing.T) {
	cfg := ServerConfig{Name: "git", Command: "git-mcp", Args: []string{"--repo", "."}, Env: map[string]string{"A": "b"}}
	// The canonical JSON the hash was taken of before AlwaysLoad existed.
	sum := sha256.Sum256([]byte(`{"args":["--repo","."],"command":"git-mcp","env":{"A":"b"}}`))
	if got, want := cfg.Hash(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Hash = %s, want %s (the hash before alwaysLoad existed)", got, want)
	}
	loaded := cfg
	loaded.AlwaysLoad = true
	if loaded.Hash() == cfg.Hash() {
		t.Error("alwaysLoad: true does not change the hash")
	}
	if !loaded.Redact().AlwaysLoad || !loaded.Clone().AlwaysLoad {
		t.Error("Redact or Clone drops AlwaysLoad")
	}
}

// ToolTimeoutMs is left out of the canonical JSON when nil, so every
// configuration recorded before it existed keeps its hash; set, it is part
// of the hash (a changed call timeout is a changed configuration), and
// Clone and Redact copy it rather than share it.
func TestToolTimeoutNilKeepsTheHash(t *testing.T) {
	cfg := ServerConfig{Name: "git", Command: "git-mcp", Args: []string{"--repo", "."}, TimeoutMs: new(int64(5000))}
	// The canonical JSON the hash was taken of before ToolTimeoutMs existed.
	sum := sha256.Sum256([]byte(`{"args":["--repo","."],"command":"git-mcp","timeout":5000}`))
	if got, want := cfg.Hash(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Hash = %s, want %s (the hash before toolTimeoutMs existed)", got, want)
	}
	timed := cfg.Clone()
	timed.ToolTimeoutMs = new(int64(120000))
	if timed.Hash() == cfg.Hash() {
		t.Error("toolTimeoutMs does not change the hash")
	}
	zero := cfg.Clone()
	zero.ToolTimeoutMs = new(int64(0))
	if zero.Hash() == cfg.Hash() {
		t.Error("toolTimeoutMs 0 (no limit) hashes like nil (the default)")
	}
	for name, c := range map[string]ServerConfig{"Clone": timed.Clone(), "Redact": timed.Redact()} {
		if c.ToolTimeoutMs == nil || *c.ToolTimeoutMs != 120000 {
			t.Errorf("%s: ToolTimeoutMs = %v, want 120000", name, c.ToolTimeoutMs)
			continue
		}
		if c.ToolTimeoutMs == timed.ToolTimeoutMs {
			t.Errorf("%s shares ToolTimeoutMs with the original", name)
		}
	}
}

// MaxOutputBytes is left out of the canonical JSON when nil, so every
// configuration recorded before it existed keeps its hash; set (0, no
// limit, included) it is part of the hash, and Clone and Redact copy it
// rather than share it.
func TestMaxOutputBytesNilKeepsTheHash(t *testing.T) {
	cfg := ServerConfig{Name: "git", Command: "git-mcp", Args: []string{"--repo", "."}}
	sum := sha256.Sum256([]byte(`{"args":["--repo","."],"command":"git-mcp"}`))
	if got, want := cfg.Hash(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Hash = %s, want %s (the hash before maxOutputBytes existed)", got, want)
	}
	budget := cfg.Clone()
	budget.MaxOutputBytes = new(int64(1 << 20))
	zero := cfg.Clone()
	zero.MaxOutputBytes = new(int64(0))
	if budget.Hash() == cfg.Hash() || zero.Hash() == cfg.Hash() || zero.Hash() == budget.Hash() {
		t.Error("maxOutputBytes does not change the hash")
	}
	for name, c := range map[string]ServerConfig{"Clone": budget.Clone(), "Redact": budget.Redact()} {
		if c.MaxOutputBytes == nil || *c.MaxOutputBytes != 1<<20 || c.MaxOutputBytes == budget.MaxOutputBytes {
			t.Errorf("%s: MaxOutputBytes = %v (shared: %t), want a copy of 1048576", name, c.MaxOutputBytes, c.MaxOutputBytes == budget.MaxOutputBytes)
		}
	}
}
