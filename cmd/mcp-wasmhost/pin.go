package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
)

// runPin is `mcp-wasmhost pin FILE.wasm...`: the sha256 line to paste into each
// file's [[plugins]] table. It only reads; config.toml is never rewritten.
func runPin(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, "usage: mcp-wasmhost pin FILE.wasm...\n\nPrints the line that pins each file in its [[plugins]] table: sha256 = \"...\".")
		if len(args) == 0 {
			return usage("pin: name a .wasm file")
		}
		return nil
	}
	for _, path := range args {
		line, err := config.PinLine(path)
		if err != nil {
			return fmt.Errorf("pin: %w", err)
		}
		if len(args) > 1 {
			fmt.Fprintf(stdout, "# %s\n", path)
		}
		fmt.Fprintln(stdout, line)
	}
	return nil
}
