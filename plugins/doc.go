// Package plugins turns .wasm files into tools: it verifies each file against the
// sha256 the operator pinned, loads it into the sandbox, reads and validates its
// manifest (docs/ABI.md), and builds the [Catalog] of tools the server offers, each
// named <plugin>_<tool>.
//
// A [Tool] checks a call's arguments against its input schema before any guest code
// runs, and checks the guest's output (UTF-8, JSON, output schema) before anyone sees it.
// Schemas are plugin-supplied and checked in the server, so each is compiled once at
// load under bounds (size, depth, references, fan-out, amplification), and every check's
// work is bounded before it starts ([Schema], schema.go).
// It knows nothing of MCP sessions; the host package maps tools onto them.
//
// Every plugin's runner is wrapped in a limiter (limit.go): at most max_concurrent
// calls run at once, a bounded queue waits in order, and past it a call is refused
// with a [BusyError] that names the limit.
package plugins
