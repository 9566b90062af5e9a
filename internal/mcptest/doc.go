// Package mcptest is what tests and benchmarks use to talk MCP without an SDK in the
// way: a raw JSON-RPC client over any MCP transport, which can send what the go-sdk
// client cannot (params.task, tasks/*) and sees every message the server sends.
package mcptest
