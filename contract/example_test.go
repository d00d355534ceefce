package contract_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcplife/mcplife/contract"
	"github.com/mcplife/mcplife/events"
)

// Compare what one server listed in two sessions: its parameter n became
// an integer and a tool was added.
func Example() {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	listing := func(session, nType string, extra ...events.ToolDef) events.Envelope {
		tools := append([]events.ToolDef{{Name: "echo",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"` + nType + `"}}}`)}}, extra...)
		return events.MustNew(session, &events.ToolsListed{Server: "fx", Tools: tools}, at)
	}
	a, b := contract.NewSnapshot("s1"), contract.NewSnapshot("s2")
	for _, env := range []events.Envelope{listing("s1", "number"), listing("s2", "integer", events.ToolDef{Name: "ping"})} {
		a.Apply(env)
		b.Apply(env)
	}
	changes := contract.CompareSnapshots(a, b)
	for _, c := range changes {
		fmt.Println(c.Class, c.Kind, c.Pointer, "-", c.Detail)
	}
	fmt.Println("breaking:", contract.AnyBreaking(changes))
	// Output:
	// breaking changed /tools/echo/inputSchema/properties/n/type - type narrowed
	// non-breaking added /tools/ping - tool added
	// breaking: true
}
