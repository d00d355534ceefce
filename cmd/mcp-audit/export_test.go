package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// recordExportSession records a session with two servers, one of which
// fails, a successful call and a failing one; the servers' environment
// holds a secret that one of them says back in its instructions and tool
// schemas.
func recordExportSession(t *testing.T, db string) string {
	t.Helper()
	cfg := writeConfig(t, map[string][]string{"good": {"only=echo,fail", "echo-env=API_TOKEN"}, "bad": {"fail-init"}})
	code, out, errOut := runCmd(t, "--db", db, "--json", "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--no-project-config", "--config", cfg,
		"--call", "good/echo", "--args", `{"text":"hello"}`)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	var got struct{ Session string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	return got.Session
}

// export -o FILE.json: the documented structure, with the servers, the
// call with its duration and outcome, and every event; no secret in it.
func TestExportJSON(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "e.db")
	session := recordExportSession(t, db)
	file := filepath.Join(t.TempDir(), "report.json")
	code, out, errOut := runCmd(t, "--db", db, "--json", "export", "last", "-o", file)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var summary struct {
		Session, File          string
		Servers, Calls, Events int
	}
	if err := json.Unmarshal([]byte(out), &summary); err != nil || summary.Session != session || summary.File != file || summary.Calls != 1 {
		t.Errorf("summary %s: %+v %v", out, summary, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("s3cr3t-value")) {
		t.Error("the export holds the secret")
	}
	var doc exportJSON
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Format != exportFormat || doc.Session.ID != session || !doc.Session.Closed || doc.Session.Events != len(doc.Events) || doc.Session.DurationMs <= 0 {
		t.Errorf("session %+v (format %q)", doc.Session, doc.Format)
	}
	servers := map[string]exportServerJSON{}
	for _, s := range doc.Servers {
		servers[s.Name] = s
	}
	if g := servers["good"]; g.Gate != "ready" || g.Tools != 3 || g.ConnectMs == nil || g.ProtocolVersion == "" || g.Status != "disconnected (requested)" {
		t.Errorf("good: %+v", g)
	}
	if b := servers["bad"]; b.Gate != "failed" || b.Status != "failed" || !strings.Contains(b.Error, "fail-init") {
		t.Errorf("bad: %+v", b)
	}
	if len(doc.Calls) != 1 || doc.Calls[0].Outcome != "ok" || doc.Calls[0].DurationMs == nil || doc.Calls[0].Name != "mcp_good_echo" || doc.Calls[0].OutputBytes != 5 {
		t.Errorf("calls %+v", doc.Calls)
	}
	if len(doc.Timeline.Servers) != 2 || len(doc.Timeline.Gates) != 1 {
		t.Errorf("timeline %+v", doc.Timeline)
	}
	// The event list is the replay's.
	code, replay, _ := runCmd(t, "--db", db, "--json", "replay", session)
	if n := strings.Count(replay, "\n"); code != 0 || n != len(doc.Events) {
		t.Errorf("%d events exported, replay has %d", len(doc.Events), n)
	}
}

// export -o FILE.html: one file that loads nothing (no http(s) or
// protocol-relative src or href, no stylesheet or script of its own), with
// the timeline, the servers, the calls and the events, and no secret.
func TestExportHTMLIsSelfContained(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "e.db")
	session := recordExportSession(t, db)
	file := filepath.Join(t.TempDir(), "report.html")
	if code, out, errOut := runCmd(t, "--db", db, "export", session, "-o", file); code != 0 || !strings.HasPrefix(out, "wrote "+file) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("s3cr3t-value")) {
		t.Error("the report holds the secret")
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict, dec.AutoClose, dec.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	elements := map[string]int{}
	ids := map[string]bool{}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		elements[el.Name.Local]++
		for _, a := range el.Attr {
			switch strings.ToLower(a.Name.Local) {
			case "src", "href", "action", "srcset", "poster", "data", "formaction":
				if v := strings.ToLower(strings.TrimSpace(a.Value)); strings.HasPrefix(v, "http:") || strings.HasPrefix(v, "https:") || strings.HasPrefix(v, "//") {
					t.Errorf("<%s %s=%q> loads from the network", el.Name.Local, a.Name.Local, a.Value)
				}
			case "id":
				ids[a.Value] = true
			}
			if el.Name.Local == "script" && a.Name.Local == "src" {
				t.Errorf("script with src %q", a.Value)
			}
		}
	}
	for _, el := range []string{"link", "img", "iframe", "object", "embed"} {
		if elements[el] > 0 {
			t.Errorf("%d <%s> elements", elements[el], el)
		}
	}
	if regexp.MustCompile(`url\(|@import`).Match(b) {
		t.Error("the style loads a URL")
	}
	for _, id := range []string{"startup", "servers", "calls", "events", "filter", "type-filter", "server-filter", "event-count"} {
		if !ids[id] {
			t.Errorf("no element #%s", id)
		}
	}
	if elements["svg"] != 1 || elements["script"] != 1 || elements["table"] != 3 {
		t.Errorf("elements %v: want the timeline, one script and three tables", elements)
	}
	for _, want := range []string{"mcp_good_echo", "fail-init", "ToolCallFinished", "ServerConnected"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// chromium returns the path of a headless Chromium, skipping the test
// without one (failing it in CI, which installs one).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH (.ci/run installs it)")
	}
	t.Skip("no chromium on PATH")
	return ""
}

// runChromium runs a headless Chromium on url with args and returns its
// standard output.
func runChromium(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
		"--no-first-run", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// The report opened in headless Chromium: it renders (a screenshot is
// written) and its script ran (the DOM holds the count it writes), and the
// filter in the URL's fragment keeps only the events it names.
func TestExportInChromium(t *testing.T) {
	bin := chromium(t)
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "e.db")
	recordExportSession(t, db)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if code, _, errOut := runCmd(t, "--db", db, "export", "last", "-o", file); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	url := "file://" + file

	shot := filepath.Join(dir, "report.png")
	runChromium(t, bin, url, "--hide-scrollbars", "--window-size=1400,1800", "--screenshot="+shot)
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10<<10 {
		t.Errorf("screenshot: %d bytes, starts %q", len(png), png[:min(8, len(png))])
	}

	dom := string(runChromium(t, bin, url, "--dump-dom"))
	total := regexp.MustCompile(`data-total="(\d+)"`).FindStringSubmatch(dom)
	if total == nil || !strings.Contains(dom, `data-filter-ready="1"`) || !strings.Contains(dom, ">"+total[1]+" of "+total[1]+" events shown<") {
		t.Fatalf("the script did not run: %.2000s", dom[strings.Index(dom, `id="event-count"`)-200:])
	}
	dom = string(runChromium(t, bin, url+"#type=ToolCallFinished", "--dump-dom"))
	hidden := len(regexp.MustCompile(`<tr [^>]*\bhidden\b`).FindAllString(dom, -1))
	if !strings.Contains(dom, ">1 of "+total[1]+" events shown<") || hidden != mustAtoi(t, total[1])-1 {
		t.Errorf("filtered on ToolCallFinished: count %q, %d rows hidden", regexp.MustCompile(`\d+ of \d+ events shown`).FindString(dom), hidden)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestExportUsageErrors(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "e.db")
	recordSession(t, db, []string{"only=echo"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "last"}, "usage: mcp-audit export SESSION -o FILE.html|FILE.json"},
		{[]string{"export", "last", "-o", "x.pdf"}, "usage: mcp-audit export"},
		{[]string{"export", "nope", "-o", "x.html"}, `no session "nope"`},
		{[]string{"export", "last", "-o", filepath.Join(t.TempDir(), "no", "such", "x.html")}, "write "},
	} {
		code, _, errOut := runCmd(t, append([]string{"--db", db}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
