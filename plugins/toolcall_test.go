package plugins_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// BenchmarkToolCall is a call of a textkit tool as the host makes it, in process:
// CheckArguments, then Call (a fresh instance, the input document, the output and
// structuredContent checks).
//
//	go test ./plugins -run NONE -bench ToolCall -benchtime 5000x -count 6
func BenchmarkToolCall(b *testing.B) {
	e := testenv.Engine(b)
	tk := testenv.Load(b, e, testenv.Spec(b, "textkit", "plugins/textkit/textkit.wasm"))
	c, err := plugins.NewCatalog([]*plugins.Plugin{tk})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, tool, args string }{
		{"stats", "textkit_stats", `{"text":"hello world"}`},
		{"sha256", "textkit_sha256", `{"text":"abc"}`},
		{"ping", "textkit_ping", `{}`},
	} {
		tool, ok := c.Lookup(bc.tool)
		if !ok {
			b.Fatalf("no tool %s", bc.tool)
		}
		args := json.RawMessage(bc.args)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := tool.CheckArguments(context.Background(), args); err != nil {
					b.Fatal(err)
				}
				if _, err := tool.Call(context.Background(), args, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
