// Package host is the MCP server: it offers the tools, resources, resource templates,
// prompts and completions of a [plugins.Catalog] over stdio and Streamable HTTP, built
// on github.com/modelcontextprotocol/go-sdk.
//
// A tools/call is checked against the tool's input schema (a violation is JSON-RPC error
// -32602, and no guest runs), then runs in a fresh sandbox instance on the request's
// context, so that a client's cancellation stops it. What the guest asks of the host on
// the way (log lines, progress, user input) is bridged to the session that made the
// call. A guest that fails (traps, runs out of time or memory, writes a bad result)
// yields a CallToolResult with isError set and a message a person understands; the
// server keeps serving.
//
//	srv := host.New(catalog, host.Options{Logger: logger})
//	err := srv.ServeStdio(ctx)                         // or
//	err = http.ListenAndServe(addr, srv.HTTPHandler())  // endpoint /mcp
package host
