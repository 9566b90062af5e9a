package bench

import (
	"context"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// BenchmarkPluginLoad is loading one plugin on a warm compilation cache: verify the pin,
// compile (a cache hit), check the imports, describe: what each plugin adds to start-up
// (figure 5 of docs/BENCHMARKS.md).
func BenchmarkPluginLoad(b *testing.B) {
	for _, g := range []struct{ name, plugin, path string }{
		{"c", "textkit", "plugins/textkit/textkit.wasm"},
		{"go", "toolbox", "plugins/toolbox/toolbox.wasm"},
	} {
		b.Run(g.name, func(b *testing.B) {
			e := testenv.Engine(b)
			spec := testenv.Spec(b, g.plugin, g.path)
			testenv.Load(b, e, spec) // warms the cache
			ctx := context.Background()
			for b.Loop() {
				p, err := plugins.Load(ctx, e, spec)
				if err != nil {
					b.Fatal(err)
				}
				p.Close(ctx)
			}
		})
	}
}
