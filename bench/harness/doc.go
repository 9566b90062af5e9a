// Package harness is the load harness behind docs/BENCHMARKS.md: it builds and starts
// the real binaries (mcp-wasmhost, and the native peers in bench/peers: mcp-go v1.2.1
// and the TypeScript SDK 1.32.2), drives every one of them with the same raw JSON-RPC
// client (Client: stdio or Streamable HTTP, no SDK), and measures the six figures of
// issue #8, each beside its baseline from the same run, repeated and reported as
// medians with their spread.
//
//	go run ./bench/cmd/benchall            # make bench: writes docs/BENCHMARKS.md
//	go run ./bench/cmd/benchall -smoke     # make bench-smoke: every step briefly (CI)
//
// Every config.toml of mcp-wasmhost is generated from one template (env.go) for each
// entry of Variants, so measuring another configuration, such as a plugin setting, is
// one more entry there; every figure then shows it beside the others. A variant's
// Replicas runs that many processes on its one config.toml, so on one shared store
// (openReplicas, Replicas): figure 2 spreads its load across them, and figure 12
// cancels on one instance a task another runs.
//
// Server memory is the VmRSS of the server's own process (/proc/PID/status), never the
// harness's. Nothing here asserts a time: a step that fails (a server that does not
// start, a wrong answer, a task that ends in the wrong state, a server that does not
// stop) fails the run.
package harness
