package loader

import (
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
)

// The seed corpora live in testdata/fuzz/<FuzzName>/: realistic files of
// each format and broken variants of them.

const fuzzPath = "/fuzz/file"

func fuzzEnv(provider, level string) parseEnv {
	return parseEnv{
		src:    events.SourceMeta{Provider: provider, ProviderName: provider, Path: fuzzPath, Level: level},
		lookup: MapEnv(map[string]string{"HOME": "/home/u", "TOKEN": "t", "EMPTY": ""}),
		cwd:    "/work/proj",
		home:   "/home/u",
	}
}

// checkResult asserts what holds for any parsed file, valid or not.
func checkResult(t *testing.T, res fileResult) {
	t.Helper()
	if res.err != nil {
		if res.err.Path != fuzzPath || !strings.HasPrefix(res.err.Msg, fuzzPath) {
			t.Fatalf("file error %+v does not name the file", res.err)
		}
	}
	for _, e := range res.entries {
		if e.cfg.Name != e.name {
			t.Fatalf("entry %q has config name %q", e.name, e.cfg.Name)
		}
		if e.src.Path != fuzzPath {
			t.Fatalf("entry %q has source %+v", e.name, e.src)
		}
		_ = validate(e.cfg, e.problems)
		_ = e.cfg.Hash()
		r := e.cfg.Redact()
		for k, v := range r.Env {
			if v != events.Redacted {
				t.Fatalf("env %q not redacted", k)
			}
		}
	}
	// Merging never panics either.
	d := merge([][]fileResult{{res}}, mergeOptions{filterExa: true, lookup: MapEnv(nil)})
	_ = d.Events()
	_ = d.Report()
}

func FuzzParseJSONC(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		clean, err := stripJSONC(data)
		if err == nil && len(clean) != len(data) {
			t.Fatalf("length changed: %d -> %d", len(data), len(clean))
		}
		doc, members, err := parseJSONC(fuzzPath, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), fuzzPath+":") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, m := range members {
			if m.Offset < 0 || m.Offset > len(data) {
				t.Fatalf("member %q at %d outside the document", m.Key, m.Offset)
			}
			if sub, ok := doc.objectOf(m); ok {
				for _, s := range sub {
					if s.Offset < m.Offset || s.Offset > m.Offset+len(m.Value) {
						t.Fatalf("nested member %q at %d outside its parent", s.Key, s.Offset)
					}
				}
			}
		}
	})
}

func FuzzParseNative(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseNative(fuzzPath, data, fuzzEnv(ProviderNative, events.LevelUser)))
	})
}

func FuzzParseMCPJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseMCPServers(mapNative)(fuzzPath, data, fuzzEnv(ProviderMCPJSON, events.LevelProject)))
	})
}

func FuzzParseClaudeCode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		local, user, _ := parseClaudeJSON(fuzzPath, data, fuzzEnv(ProviderClaudeCode, events.LevelUser), []string{"/work/proj"})
		checkResult(t, local)
		checkResult(t, user)
		checkResult(t, parseMCPServers(mapClaudeCode)(fuzzPath, data, fuzzEnv(ProviderClaudeCode, events.LevelProject)))
	})
}

func FuzzParseCodex(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseCodex(fuzzPath, data, fuzzEnv(ProviderCodex, events.LevelUser)))
	})
}

func FuzzParseGemini(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseGemini(fuzzPath, data, fuzzEnv(ProviderGemini, events.LevelUser)))
	})
}

func FuzzParseOpenCode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseOpenCode(fuzzPath, data, fuzzEnv(ProviderOpenCode, events.LevelUser)))
	})
}

func FuzzParseCursor(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseEditorServers(mapCursor)(fuzzPath, data, fuzzEnv(ProviderCursor, events.LevelUser)))
	})
}

func FuzzParseWindsurf(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseEditorServers(mapWindsurf)(fuzzPath, data, fuzzEnv(ProviderWindsurf, events.LevelUser)))
	})
}

func FuzzParseCrush(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseCrush(fuzzPath, data, fuzzEnv(ProviderCrush, events.LevelUser)))
	})
}

func FuzzParseClaudeDesktop(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseMCPServers(mapClaudeDesktop)(fuzzPath, data, fuzzEnv(ProviderClaudeDesktop, events.LevelUser)))
	})
}

func FuzzParseVSCode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResult(t, parseVSCode(fuzzPath, data, fuzzEnv(ProviderVSCode, events.LevelProject)))
	})
}

// FuzzExpandRefs checks the substitution helpers on arbitrary text.
func FuzzExpandRefs(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		lookup := MapEnv(map[string]string{"A": "1", "EMPTY": ""})
		out := expandRefs(s, lookup, nil)
		if !strings.Contains(s, "${") && out != s {
			t.Fatalf("text without references changed: %q -> %q", s, out)
		}
		_, _ = expandStrict(s, lookup)
		_ = braceBareRefs(s)
		if out := expandWithBare(s, lookup, nil); !strings.Contains(s, "$") && out != s {
			t.Fatalf("text without $ changed: %q -> %q", s, out)
		}
		_ = braceOpenCodeRefs(s)
		_ = resolveWithoutCommands(s, lookup)
	})
}
