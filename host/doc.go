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
// Nor can a client's bytes end it: on stdio a line that is not a JSON-RPC message, nests
// deeper than [MaxMessageDepth] or exceeds Options.MaxMessageBytes gets an error answer
// and the next line is served, and when stdin ends every request already read is
// answered before ServeStdio returns. On HTTP a POST body has Options.BodyReadTimeout to
// arrive, sessions are capped and expire when idle, and a POST without a session other
// than initialize gets HTTP 400.
//
// Tasks come in two lines, MCP 2025-11-25's and the 2026-07-28 extension's, and each
// request gets one wire, chosen once (callerOf in caller.go) and answering for
// everything wire-specific: wire.go names them, wire_2025.go, wire_ext.go and
// wire_none.go implement them, and testdata/wire holds a golden transcript of each.
//
//	srv := host.New(catalog, host.Options{Logger: logger})
//	err := srv.ServeStdio(ctx)                         // or
//	err = http.ListenAndServe(addr, srv.HTTPHandler())  // endpoint /mcp
package host
