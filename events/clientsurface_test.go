package events

import "testing"

func TestDescribeClientSurface(t *testing.T) {
	for _, c := range []struct {
		ev   Event
		want string
	}{
		{&ServerLog{Server: "db", Level: LogInfo, Text: "ready\nport 5432"}, `db level=info text="ready\nport 5432"`},
		{&ServerLog{Server: "db", Level: LogWarning, Logger: "mcplife", Text: "3 dropped", Dropped: 3}, `db level=warning logger=mcplife dropped=3 text="3 dropped"`},
		{&ToolCallFinished{Server: "fs", Tool: "read", OutputBytes: 300000, Truncated: true}, `fs tool=read isError=false truncated=true outputBytes=300000`},
		{&ToolCallFinished{Server: "fs", Tool: "read", OutputBytes: 10}, `fs tool=read isError=false`},
	} {
		if got := Describe(c.ev); got != c.want {
			t.Errorf("Describe(%T) = %s, want %s", c.ev, got, c.want)
		}
	}
}
