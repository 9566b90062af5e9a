package config_test

import (
	"fmt"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
)

func ExampleParse() {
	const file = `
[server]
name = "demo"

[[plugins]]
name = "echo"
path = "plugins/echo.wasm"
sha256 = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"
timeout = "5s"
env = { GREETING = "hello" }
`
	// Load("/srv/mcp/config.toml") would read the file and call Parse like this.
	cfg, err := config.Parse([]byte(file), "config.toml", "/srv/mcp")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("server:", cfg.Server.Name, "log level:", cfg.Server.LogLevel)
	for _, p := range cfg.Plugins {
		fmt.Println("plugin:", p.Name)
		fmt.Println("  path:", p.Path)
		fmt.Println("  sha256:", p.SHA256)
		fmt.Println("  memory:", p.MemoryMiB, "MiB, timeout:", p.Timeout)
		fmt.Println("  input/output caps:", p.MaxInputBytes, p.MaxOutputBytes)
		fmt.Println("  env:", p.Env, "dirs:", len(p.Dirs))
	}
	// Output:
	// server: demo log level: info
	// plugin: echo
	//   path: /srv/mcp/plugins/echo.wasm
	//   sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
	//   memory: 64 MiB, timeout: 5s
	//   input/output caps: 1048576 1048576
	//   env: map[GREETING:hello] dirs: 0
}

// Every problem in the file is reported at once, each naming where it is.
func ExampleParse_errors() {
	const file = `[server]
log_level = "verbose"

[[plugins]]
name = "toolbox"
path = "toolbox.wasm"
sha256 = "not-a-digest"
memroy_mib = 128
memory_mib = 9000
env = { "1ST" = "x" }
`
	_, err := config.Parse([]byte(file), "config.toml", "/srv/mcp")
	fmt.Println(err)
	// Output:
	// config.toml:8: unknown key "plugins.memroy_mib"
	// config.toml:2: server: log_level "verbose" is not one of debug, info, warn, error
	// config.toml:7: plugins[0] ("toolbox"): sha256 "not-a-digest" must be 64 hexadecimal characters
	// config.toml:9: plugins[0] ("toolbox"): memory_mib 9000 out of range 1..4096
	// config.toml:10: plugins[0] ("toolbox"): env name "1ST" is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)
}
