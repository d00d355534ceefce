package toolsearch

// synonymWeight is the weight of a query term that was not in the query
// but was added for one that was: a tool that uses the agent's own word
// ranks above one that uses a synonym.
const synonymWeight = 0.5

// synonymGroups are words that name the same action or thing in tool
// definitions and in requests. Every word of a group expands to the others.
var synonymGroups = [][]string{
	{"create", "new", "add", "make"},
	{"delete", "remove", "drop", "destroy", "erase"},
	{"get", "fetch", "retrieve", "read", "show", "view", "display"},
	{"list", "enumerate", "show"},
	{"search", "find", "query", "lookup", "look"},
	{"update", "edit", "modify", "change", "set"},
	{"send", "post", "message"},
	{"run", "execute", "exec", "invoke", "trigger", "launch"},
	{"start", "launch", "begin"},
	{"stop", "halt", "terminate", "kill"},
	{"restart", "reboot", "bounce"},
	{"deploy", "release", "publish", "rollout"},
	{"issue", "ticket", "bug"},
	{"error", "exception", "failure", "fail", "crash", "broken"},
	{"log", "logs", "output", "trace"},
	{"email", "mail", "inbox"},
	{"meeting", "event", "appointment"},
	{"calendar", "schedule"},
	{"directory", "folder", "dir"},
	{"repository", "repo"},
	{"database", "db"},
	{"documentation", "docs", "doc", "manual", "reference"},
	{"configuration", "config", "settings"},
	{"environment", "env"},
	{"user", "member", "person", "people", "account"},
	{"comment", "note", "reply"},
	{"cost", "spend", "billing", "bill", "usage"},
	{"payment", "pay", "charge"},
	{"customer", "client", "buyer"},
	{"contact", "lead"},
	{"metric", "metrics", "stat", "stats", "graph", "chart"},
	{"alert", "alarm", "monitor"},
	{"incident", "outage"},
	{"diff", "changes", "changed"},
	{"upload", "put"},
	{"download", "save"},
	{"click", "press", "tap"},
	{"type", "fill", "enter", "input"},
	{"navigate", "visit", "browse", "open", "go", "goto"},
	{"screenshot", "capture", "snapshot"},
	{"secret", "password", "credential", "token"},
	{"vulnerability", "vulnerable", "cve", "security", "insecure"},
	{"slow", "slowest", "latency", "performance"},
	{"instance", "vm", "server", "machine", "host"},
	{"container", "docker"},
	{"kubernetes", "k8s", "kube", "kubectl", "cluster"},
	{"pod", "pods"},
	{"message", "msg", "chat", "text"},
	{"sms", "text"},
	{"task", "todo", "chore"},
	{"rename", "move"},
	{"table", "tables"},
	{"close", "resolve", "finish", "complete", "done"},
	{"assign", "assignee"},
	{"test", "tests", "spec"},
	{"build", "compile"},
	{"web", "internet", "online"},
	{"address", "location", "place"},
	{"coordinates", "latitude", "longitude", "geocode"},
	{"remember", "memorize", "memory", "observation"},
	{"time", "clock"},
	{"timezone", "zone"},
}

// abbreviations expand a short form in a request to the words tools use.
// They expand one way: a tool that says "pull request" does not match
// every "pr" of unrelated text.
var abbreviations = map[string][]string{
	"pr":   {"pull", "request"},
	"prs":  {"pull", "request"},
	"mr":   {"merge", "request"},
	"mrs":  {"merge", "request"},
	"ci":   {"pipeline", "build", "workflow", "job"},
	"cd":   {"deploy", "pipeline"},
	"js":   {"javascript"},
	"ts":   {"typescript"},
	"dm":   {"direct", "message"},
	"gh":   {"github"},
	"wiki": {"page", "documentation"},
	"sql":  {"query"},
}

// expansions maps a query term (a stem) to the terms (stems) it adds.
var expansions = buildExpansions()

func buildExpansions() map[string][]string {
	stemOf := func(w string) string {
		t := appendTerms(nil, w)
		if len(t) == 0 {
			return ""
		}
		return t[0]
	}
	m := map[string][]string{}
	add := func(from, to string) {
		if from == "" || to == "" || from == to {
			return
		}
		for _, x := range m[from] {
			if x == to {
				return
			}
		}
		m[from] = append(m[from], to)
	}
	for _, g := range synonymGroups {
		for _, a := range g {
			for _, b := range g {
				add(stemOf(a), stemOf(b))
			}
		}
	}
	for short, long := range abbreviations {
		for _, w := range long {
			add(stemOf(short), stemOf(w))
		}
	}
	return m
}
