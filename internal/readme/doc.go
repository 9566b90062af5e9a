// Package readme keeps README.md true: its test follows the README in a fresh clone of
// the repository, running every shell block marked <!-- readme-test --> and driving the
// tour's JSON lines (the block marked <!-- readme-tour -->) against the real binary.
//
// A block is marked by the marker alone on the line before its opening fence:
//
//	<!-- readme-test -->
//	```sh
//	go install ./cmd/mcp-wasmhost
//	```
//
// Unmarked blocks (client configuration, commands that need a network or a client
// this machine does not have) are documentation only.
//
// Two quick tests run under -short too: README stays within its size budget (about
// 12 KB, detail lives in docs/), and each of its relative links names a file and, with
// a #fragment, a heading there.
package readme
