// Package bench measures what recording costs: the bare go-sdk client
// against mcplife with the memory store and with the SQLite store at both
// durability levels, on the same fixture servers, in one process and one
// run, interleaved round by round so that a machine shared with other work
// disturbs every side alike. Each benchmark reports, per side, the median
// of the per-round ratios to the bare client (paired ratios), next to the
// absolute figures.
//
// Run everything (11 rounds each):
//
//	go test ./bench -run '^$' -bench . -benchtime 11x
//
// It holds no tests; its benchmarks take a few minutes on two cores.
package bench
