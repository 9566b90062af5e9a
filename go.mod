module github.com/mcp-wasmhost/mcp-wasmhost

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	golang.org/x/sys v0.44.0 // indirect
)
