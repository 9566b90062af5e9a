// Package wasmfile reads what a WebAssembly module declares, from its sections
// alone: imports, exports, function signatures, memories and tables. It is for
// describing a module to a person (mcp-wasmhost inspect), not for running it:
// nothing is validated beyond what reading needs, and the bytes may be hostile, so
// every count and length is held to the bytes that remain and to fixed caps.
package wasmfile
