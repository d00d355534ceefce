// Package bench measures what recording costs: the bare go-sdk client
// (offering the protocol version mcplife offers by default, 2026-07-28, or
// the one -protocol names) against mcplife with the memory store
// and with the SQLite store at both durability levels, on the same fixture
// servers, in one process and one run, interleaved round by round so that
// a machine shared with other work disturbs every side alike. Each
// benchmark reports, per side, the median of the per-round ratios to the
// bare client (paired ratios, "SIDE/bare"), next to the absolute figures;
// the SQLite store at normal durability ("sqlite-normal") is the default
// a host gets.
//
// The lifecycle's figures:
//
//   - BenchmarkStartup: connect and list N = 1, 20, 50 servers in parallel
//     (BenchmarkStartupScale: 200 servers of 50 tools).
//   - BenchmarkCall: 100 echo calls per side per round, the sides taking
//     turns call by call; p50 and p99 over every call ("SIDE-µs",
//     "SIDE-p99-µs"), the paired ratio of the p50s and the ratio of the
//     p99s ("SIDE-p99/bare").
//   - BenchmarkClose: Manager.Close of 20 connected idle servers against
//     closing 20 bare ClientSessions; median and p99 over the rounds.
//   - BenchmarkIdle: goroutines and heap per idle connected server (50
//     connected), and the goroutines mcplife's own code runs per server;
//     the first round logs them by the function that started them.
//
// Shared servers (a shared host served in this process on a socket of the
// benchmark's, the memory store on both sides):
//
//   - BenchmarkSharedCall: an echo call on the fixture run by the host's
//     own manager over stdio ("direct") against one through the shared
//     host ("shared"), 200 calls per side per round taking turns call by
//     call; p50 and p99 over every call and the ratios ("shared/direct",
//     "shared-p99/direct"; the goal is 1.25 or less for both).
//   - BenchmarkSharedCallProcess: the same with the shared host in a
//     process of its own (the test binary in the "shared-host" role), as
//     `mcp-audit daemon` runs it.
//   - BenchmarkSharedAttach: a host connecting 10 fixture servers that
//     another host keeps running in the shared host, until it has all
//     their tools; median and p99 over the rounds ("attach-ms"; the goal
//     is 15 ms or less).
//   - BenchmarkSharedFanout: 5 hosts each connecting the same 10 servers
//     (fixture, and server-everything on node from node_modules), unshared
//     and shared: the server processes running ("SIDE-procs", fifty
//     against ten) and their total RSS ("SIDE-rss-MiB"). The hosts are managers
//     of the benchmark's process, so their own memory is not in the
//     figure; the everything round takes about 25 s, most of it stopping
//     server-everything, which does not exit when its stdin closes.
//
// Run them (5 rounds each):
//
//	go test ./bench -run '^$' -bench 'Shared' -benchtime 5x
//
// Run everything (11 rounds each):
//
//	go test ./bench -run '^$' -bench . -benchtime 11x
//
// The flag -sides=sqlite-normal (or memory, sqlite-full, comma-separated)
// runs the bare side and those only, e.g. to keep a profile to one store:
//
//	go test ./bench -run '^$' -bench 'Call$' -benchtime 11x -sides=sqlite-normal -cpuprofile cpu.out
//
// Calls and closes are trace regions ("call SIDE", "close SIDE"), so a
// -trace shows what the slow ones waited for.
//
// # Before and after
//
// compare.sh runs the same benchmarks on two checkouts, alternately, so
// that load on the machine falls on both: "before" is a git revision
// (exported with git archive into a temporary directory, with the working
// tree's bench/ copied in so both run the same benchmarks; -own keeps the
// revision's own), "after" is the working tree. It builds one test binary
// for each, runs '^Benchmark(Startup|Call|Close|Idle)$' (-bench, with
// -benchtime 11x) with before, after, after, before, ... K times (-k,
// default 3; flags after -- go to both binaries), and prints one row per benchmark and metric: the median of the K
// runs of each side, their range, and after/before. Ratios to bare are
// from one run each, so they compare across the two checkouts even when
// the machine's load changed between runs. The raw output, with the load
// average at the start of each run, goes to -o FILE.
//
//	bench/compare.sh -k 5 -o /tmp/bench.txt main
//	bench/compare.sh -bench 'Call$' main -- -sides=sqlite-normal
//
// It holds no tests; its benchmarks take a few minutes on two cores, and
// one compare.sh run with the default set about K times twice that.
package bench
