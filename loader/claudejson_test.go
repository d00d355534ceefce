package loader

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
)

// claudeSeeds are ~/.claude.json shapes whose reading the scan must not
// change: comments, trailing commas, repeated keys, escaped keys, both
// working directories, projects that are not objects, and broken files.
var claudeSeeds = []string{
	``,
	"  \n\t",
	"\xef\xbb\xbf{}",
	`// only a comment`,
	`{}`,
	`[]`,
	`{"mcpServers": {"a": {"command": "a"}}}`,
	`{"mcpServers": {"a": {"command": "a"},}, /* c */ "projects": {"/work/proj": {"mcpServers": {"p": {"command": "p"}}, "disabledMcpjsonServers": ["x", 1, "y"]}}}`,
	`{"mcpServers": {"a": {"command": "a"}}, "mcpServers": {"b": {"command": "b"}}}`,
	`{"projects": {"/work/proj": {"mcpServers": {"p1": {"command": "p"}}}, "/real/proj": {"mcpServers": {"p2": {"command": "p"}}}}}`,
	`{"projects": {"/real/proj": {"mcpServers": {"p2": {"command": "p"}}}, "/work/proj": 3, "/real/proj": {"mcpServers": {"p3": {"command": "p"}}}}}`,
	`{"projects": {"/work/proj": [], "/real/proj": {"mcpServers": {"p2": {"command": "p"}}}}}`,
	`{"projects": {"/work/proj": {"mcpServers": {"p1": {"command": "p"}}}, "/real/proj": {}, "/work/proj": {"mcpServers": null}}}`,
	`{"projects": []}`,
	`{"projects": {"/work/proj": {"mcpServers": 5}}}`,
	`{"mcpServers": []}`,
	`{"mcpServers": null}`,
	`{"\u006dcpServers": {"esc": {"command": "e"}}}`,
	`{"projects": {"/work/pr\u006fj": {"mcpServers": {"esc": {"command": "e"}}}}}`,
	"{\"projects\": {\"/work/proj\xff\": {\"mcpServers\": {\"bad\": {\"command\": \"b\"}}}}}",
	`{"history": [{"display": "fix the // comment parser /* here */", "n": -0.5e+3, "t": true, "f": false, "z": null}], "mcpServers": {"a": {"command": "a", "args": ["\"q\"", "\\", "\u00e9"]}}}`,
	`{"a": [,], "b": {,}, "mcpServers": {"a": {"command": "a"}}}`,
	`{"a": [1,,], "mcpServers": {}}`,
	`{"a": 1/**/2}`,
	`{"a": 01}`,
	`{"a": "x` + "\x01" + `"}`,
	`{"a": "\x"}`,
	`{"a": tru}`,
	`{"mcpServers": {"a": {"command": "a"}}`,
	`{"mcpServers": {}} {}`,
	`{"mcpServers": {}},`,
	`{"mcpServers": {}} // after`,
	`{"a": /* open`,
	`{"a": 1 /`,
	"{\"mcpServers\":\n  {\"a\": {\"command\": \"a\", \"timeout\": \"x\"},\n   \"\": {\"command\": \"e\"},\n   \"b\": 7}}",
	`{"mcpServers": {"a": {"command": "${TOKEN}", "env": {"K": "${MISSING}"}}}}`,
	`{"a": ` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"a": ` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `, "mcpServers": {"deep": {"command": "d"}}}`,
	`{"a": ` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `, "mcpServers": {"deep": {"command": "d"}}}`,
	`{"a": ` + strings.Repeat(`{"b": `, 9998) + `1` + strings.Repeat("}", 9998) + `, "mcpServers": {"deep": {"command": "d"}}}`,
}

// claudeCwds are the working directories the seeds are read for: the
// path and its symlink-free form.
var claudeCwds = []string{"/work/proj", "/real/proj"}

// checkClaudeSame fails when parseClaudeJSON, which scans the file, reads
// data otherwise than decoding the whole file does.
func checkClaudeSame(t *testing.T, data []byte) {
	t.Helper()
	pe := fuzzEnv(ProviderClaudeCode, events.LevelUser)
	l1, u1, r1 := parseClaudeJSON(fuzzPath, data, pe, claudeCwds)
	l2, u2, r2 := parseClaudeJSONWhole(fuzzPath, data, pe, claudeCwds)
	if !reflect.DeepEqual(l1, l2) || !reflect.DeepEqual(u1, u2) || !reflect.DeepEqual(r1, r2) {
		t.Fatalf("%q:\nscan:  local %+v\n       user %+v\n       rejected %q\nwhole: local %+v\n       user %+v\n       rejected %q", data, l1, u1, r1, l2, u2, r2)
	}
}

func TestClaudeScanReadsAsTheWholeParse(t *testing.T) {
	for _, s := range claudeSeeds {
		checkClaudeSame(t, []byte(s))
	}
}

func FuzzClaudeScanReadsAsTheWholeParse(f *testing.F) {
	for _, s := range claudeSeeds {
		if len(s) < 1000 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkClaudeSame(t, data) })
}

// Reading the servers of a large ~/.claude.json builds nothing of the
// rest: its allocations stay far below the file's size.
func TestClaudeScanAllocatesLittle(t *testing.T) {
	data := claudeStateFile(8 << 20)
	pe := fuzzEnv(ProviderClaudeCode, events.LevelUser)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	local, user, _ := parseClaudeJSON("/h/.claude.json", data, pe, []string{"/work/proj"})
	runtime.ReadMemStats(&after)
	if local.err != nil || user.err != nil || len(user.entries) != 1 || len(local.entries) != 1 {
		t.Fatalf("local %+v, user %+v", local, user)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("reading the servers of a %d MiB file allocated %d bytes, want under 1 MiB", len(data)>>20, got)
	}
}

// claudeStateFile resembles ~/.claude.json after long use, of about size
// bytes: prompt history in the working directory's project and in others,
// beside a few servers.
func claudeStateFile(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"numStartups": 900, "mcpServers": {"u": {"command": "echo"}}, "projects": {`)
	entry := `{"display": "` + strings.Repeat("x", 1000) + `", "pastedContents": {}}`
	for p := 0; b.Len() < size; p++ {
		if p > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"/home/u/src/p%d": {"allowedTools": [], "history": [`, p)
		for i := 0; i < 1000 && b.Len() < size; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(entry)
		}
		b.WriteString(`], "mcpServers": {"p": {"command": "echo"}}, "lastCost": 0.12}`)
	}
	b.WriteString(`, "/work/proj": {"history": [], "mcpServers": {"local": {"command": "echo"}}}}}`)
	return b.Bytes()
}

// BenchmarkClaudeState reads the servers of a 30 MB ~/.claude.json, by the
// scan (scan) and by decoding the whole file (whole), in one run.
func BenchmarkClaudeState(b *testing.B) {
	data := claudeStateFile(30 << 20)
	pe := fuzzEnv(ProviderClaudeCode, events.LevelUser)
	for _, bc := range []struct {
		name  string
		parse func(string, []byte, parseEnv, []string) (fileResult, fileResult, []string)
	}{{"scan", parseClaudeJSON}, {"whole", parseClaudeJSONWhole}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				local, user, _ := bc.parse("/h/.claude.json", data, pe, []string{"/work/proj"})
				if local.err != nil || user.err != nil || len(user.entries) != 1 || len(local.entries) != 1 {
					b.Fatal("parse failed")
				}
			}
		})
	}
}
