// Command mcpgo is the native peer of the benchmarks: the trivial tool "ping" (answers
// the text "pong", taskSupport optional, like textkit_ping) served by
// github.com/mark3labs/mcp-go's task server, over stdio or Streamable HTTP at /mcp.
// It is its own module so that mcp-go never becomes a dependency of mcp-wasmhost.
//
//	go run . [--http 127.0.0.1:PORT]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP at ADDR/mcp instead of stdio")
	flag.Parse()
	s := server.NewMCPServer("mcpgo-peer", "1",
		server.WithToolCapabilities(false),
		server.WithTaskCapabilities(true, true, true),
	)
	s.AddTool(mcp.NewTool("ping",
		mcp.WithDescription("Answers with the text pong."),
		mcp.WithTaskSupport(mcp.TaskSupportOptional),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("pong"), nil
	})
	var err error
	if *addr != "" {
		err = server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp")).Start(*addr)
	} else {
		err = server.ServeStdio(s)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpgo:", err)
		os.Exit(1)
	}
}
