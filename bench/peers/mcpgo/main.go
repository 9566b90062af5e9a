// Command mcpgo is the native peer of the benchmarks: the trivial tool "ping" (answers
// the text "pong", taskSupport optional, like textkit_ping) and "ask" (asks the user to
// confirm through elicitation and returns the action, like the C test guest asker)
// served by github.com/mark3labs/mcp-go's task server, over stdio or Streamable HTTP
// at /mcp.
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
		server.WithElicitation(),
	)
	s.AddTool(mcp.NewTool("ping",
		mcp.WithDescription("Answers with the text pong."),
		mcp.WithTaskSupport(mcp.TaskSupportOptional),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("pong"), nil
	})
	s.AddTool(mcp.NewTool("ask",
		mcp.WithDescription("Asks the user to confirm and returns the action."),
		mcp.WithTaskSupport(mcp.TaskSupportOptional),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// mcp-go runs a task on the context of the request that created it, which ends
		// as soon as the CreateTaskResult is sent; without WithoutCancel the request
		// for input would fail at once. mcp-go has no way to report input_required: the
		// task stays "working" while it waits.
		res, err := s.RequestElicitation(context.WithoutCancel(ctx), mcp.ElicitationRequest{
			Params: mcp.ElicitationParams{
				Message: "Proceed?",
				RequestedSchema: map[string]any{"type": "object",
					"properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}},
			},
		})
		if err != nil {
			return mcp.NewToolResultError("could not ask: " + err.Error()), nil
		}
		return mcp.NewToolResultText(string(res.Action)), nil
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
