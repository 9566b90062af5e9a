module github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest

go 1.26.8
