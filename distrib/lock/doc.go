// Package lock reads and writes mcp-wasmhost.lock, the JSON file beside config.toml that
// pins each OCI plugin: the manifest digest its source resolved to, the module's sha256,
// the verified signature bundle's digest and its signer. `mcp-wasmhost pull` writes it;
// the server only reads it, so a new digest arrives only through pull.
package lock
