// Package bench measures what a call costs, each figure beside its baseline from the
// same run: bare wazero (instantiate + call) is the floor; the sandbox adds limits,
// grants and checks; tools/call adds MCP over a transport.
//
//	go test ./bench -run '^$' -bench . -benchtime 2s
//
// Each benchmark reports ns/op (the mean) and p50/p99 latencies in microseconds.
// Nothing here asserts a time: machines are noisy, and figures are read as ratios.
package bench
