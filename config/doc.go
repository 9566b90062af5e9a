// Package config reads config.toml, the file that tells mcp-wasmhost what to
// serve: the server's own settings and the WebAssembly plugins whose tools it
// offers.
//
// # The file
//
// Here is every key. Only a plugin's name, path and sha256 are required;
// every other key has a safe default, shown in its comment:
//
//	[server]
//	name = "my-tools"          # serverInfo.name; default "mcp-wasmhost"
//	log_level = "info"         # debug, info, warn or error; default "info"
//	cache_dir = ""             # compilation cache; default under the user cache dir; "off" disables it
//
//	[[plugins]]
//	name = "toolbox"           # 1-32 of a-z, 0-9, '-', starting with a letter; unique
//	path = "plugins/toolbox.wasm"  # relative to this file's directory
//	sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//	memory_mib = 64            # linear memory cap, 1..4096; default 64 (left out; 0 is refused)
//	timeout = "30s"            # per call, 1ms..24h; default 30s
//	max_input_bytes = 1048576  # request size cap, up to 64 MiB; default 1 MiB
//	max_output_bytes = 1048576 # result size cap, up to 64 MiB; default 1 MiB
//	env = { GREETING = "hello" }  # the guest's whole environment
//	inherit_env = ["TZ"]       # copied from the server's environment when set there
//
//	[[plugins.dirs]]           # a host directory the guest may see
//	host = "data"              # relative to this file's directory; must exist
//	guest = "/data"            # where the guest sees it
//	writable = false           # default read-only
//
// A plugin from an OCI registry has source and a signature policy instead of
// path and sha256; mcp-wasmhost.lock beside the file pins it ([Distribution],
// [Verify], docs/DISTRIBUTION.md):
//
//	[[plugins]]
//	name = "kit"
//	source = "oci://registry.example/org/textkit:1.0.0"
//	verify = { key = "cosign.pub" }  # or identity, issuer, trusted_root; or "none"
//
// A plugin gets nothing it is not given here: no environment variables, no
// directories, no more memory or time than its limits. An empty file is
// valid: the server starts and offers no tools.
//
// # Loading
//
// [Load] reads the file, decodes it strictly, fills in defaults and validates
// the result. Relative paths (plugin files, host directories, cache_dir) are
// resolved against the directory that holds the file and returned absolute, so
// the server behaves the same whatever its working directory:
//
//	cfg, err := config.Load("config.toml")
//	if err != nil {
//		return err // every problem in the file, one per line
//	}
//	for _, p := range cfg.Plugins {
//		// p.Path is absolute; p.Timeout.Duration is never zero.
//	}
//
// [Parse] does the same for bytes already in memory; tests use it.
//
// # Errors
//
// A config that cannot be used is refused with every problem reported at
// once, each line naming the file and, where it can, the line:
//
//	config.toml:14: unknown key "plugins.memroy_mib"
//	config.toml:15: plugins[1] ("toolbox"): memory_mib 9000 out of range 1..4096
//	config.toml:19: plugins[1] ("toolbox"): dirs[0]: host "/srv/mcp/data" does not exist
//
// A value problem's line is that of its key, else of its table's header.
//
// Keys are case-sensitive and a key the server does not know is an error,
// never ignored: a misspelt limit must not silently become the default.
// TOML syntax errors are reported alone, with their line. Otherwise values of
// the wrong type (a string where a number belongs) and unknown keys are
// reported, and, if every value had the right type, every broken rule too.
// A syntax error wraps a [toml.ParseError], so errors.As can recover it for a
// detailed display.
//
// [toml.ParseError]: https://pkg.go.dev/github.com/BurntSushi/toml#ParseError
package config
