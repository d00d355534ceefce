// Package golden runs lifecycle scenarios of the manager deterministically
// and compares the recorded event stream with golden files.
//
// Each scenario is a txtar file in testdata:
//
//	prose saying what the scenario shows
//	-- config.json --
//	{"gate": "50ms",
//	 "servers": {"beta": {"fixture": ["only=echo", "block-init-until=@beta"]}},
//	 "cache": {"beta": ["echo"]}}
//	-- script --
//	async c: connect beta
//	join c
//	release beta
//	wait ToolsListed beta
//	-- events --
//	-- results --
//	-- view --
//	-- log --
//
// config.json holds the manager's gate, the servers (events.ServerConfig
// fields plus "fixture" behaviours of internal/fixture, "@name" naming a
// gate) and a cache seeded as an earlier session would have left it
// ("cache": tool names, "cacheResources": resource URIs, "cachePrompts":
// prompt names, per server; "cacheTTL": the ttlMs a server of protocol
// 2026-07-28 gave its cached tool list) and "share" ({"idle": "1ms"}):
// the hosts attach their stdio servers to a shared host the script
// starts in the test process.
// The script's steps run one after another; the four last sections are
// the recorded output, rewritten by `go test ./test/golden -update`:
// events (one events.Describe line per event, correlation ids renamed c1,
// c2… by first appearance, temporary paths, the fixture binary and ports
// replaced), results (each step and what it returned), view (the manager's
// servers, with their resources, templates and prompts when they have
// any, and tools when the script ended) and log (warnings, sorted).
//
// A server lists its resources and prompts after its first tool list,
// while the startup gate may be deciding; a scenario about them holds the
// lists with the fixture's block-surface-until gate until the connect has
// returned, so they are recorded after the gate's outcome.
//
// # Determinism
//
// The journal's clock is injected (one millisecond per reading) and
// correlation ids are renamed, so nothing depends on the machine's speed.
// Servers that would run in parallel are held at fixture gates and
// released in the script's order; after each release the script waits for
// the resulting event, so the recorded order is the scripted order. The
// manager records a round's ConnectStarted events together, sorted by
// server, and a teardown's Disconnected events likewise; nothing is
// reordered by the harness.
//
// A short startup gate is used only while every server of the round is
// blocked, so the gate elapsing is forced. A server that is still pending
// at the gate without a cached list is "awaited"; the manager records
// nothing at that moment, so the harness notices the gate's decision
// through manager.Options.OnGate instead ("wait-gate") before the script
// releases the server.
//
// # Script steps
//
//	connect NAME...         Manager.ConnectServers with these servers
//	reload NAME...          Manager.Reload rediscovering these servers
//	reload-failing          Manager.Reload whose discovery (the loader) fails as a whole
//	disconnect NAME         Manager.DisconnectServer
//	disconnect-all          Manager.DisconnectAll
//	reconnect-now NAME      Manager.ReconnectNow: a reconnect waits (an hour) until this step
//	login NAME              Manager.Login of a server served "oauth" (the fixture's browser)
//	call TOOL [JSON]        call an exposed tool ("@gate" strings become gate paths);
//	                        a tool exposed earlier can be called after it disappeared
//	release GATE...         release fixture gates
//	subscribe SERVER URI    Manager.SubscribeResource
//	read SERVER URI         Manager.ReadResource, one line per item of the contents
//	reached GATE [N]        wait until servers reached the gate N times (default 1)
//	wait TYPE [SERVER] [#N] wait for the first such event after the latest action
//	                        step began, or for the N-th of the session
//	wait-gate               wait until the startup gate of the latest connect decided its outcomes
//	watch-status NAME S     wait through Manager.Watch until NAME has status S
//	tools, status NAME...   print the tool view or statuses
//	async ID: STEP          run STEP in the background
//	join ID                 wait for it and print its result
//	share-host start        start a shared host (session shared-host-N) on the scenario's socket
//	share-host kill         cut its connections at once, as its death would, then end it
//	share-host end          wait until it ended by itself (neither servers nor hosts)
//	share-host wait ...     wait, as "wait", for an event of the current shared host's session
//	host2 STEP              a second host (session host2) of the same servers: connect NAME...,
//	                        call TOOL [JSON], disconnect NAME, wait ..., close
//
// A sharing scenario's events section has, after the scenario's session,
// the other sessions (the shared hosts', host2's), each after a line
// naming it. The shared instances are named NAME~N by the order their
// shared hosts started them, the test's pid is $PID, the relay's random
// MCP session id $MCPSESSION and the shared host's working directory
// $WD. Each session's order is the script's: a step of one host waits
// for the other side's event ("share-host wait HostAttached #2") before
// the next step acts.
//
// After every step the live view is compared with a replay of the stored
// history; when the script ends the manager is closed, SessionClosed is
// recorded, and the history must satisfy every invariant of package verify.
//
// # Files
//
// The harness is test code only, one file per role: script_test.go (the
// config.json and script sections), run_test.go (playing a scenario
// against a manager), record_test.go (the recorded history, clock, gate
// and log), format_test.go (the output sections) and archive_test.go
// (reading and replacing a section of a golang.org/x/tools/txtar
// archive).
package golden
