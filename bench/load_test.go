package bench

import (
	"context"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// BenchmarkPluginLoad is loading one plugin on a warm compilation cache, as a server
// start does (a fresh engine each time, the cache directory warm): verify the pin,
// compile (a cache hit), check the imports, describe. It is what each plugin adds to
// start-up (figure 5 of docs/BENCHMARKS.md).
func BenchmarkPluginLoad(b *testing.B) {
	for _, g := range []struct{ name, plugin, path string }{
		{"c", "textkit", "plugins/textkit/textkit.wasm"},
		{"go", "toolbox", "plugins/toolbox/toolbox.wasm"},
	} {
		b.Run(g.name, func(b *testing.B) {
			spec := testenv.Spec(b, g.plugin, g.path)
			testenv.Load(b, testenv.Engine(b), spec) // warms the cache directory
			ctx := context.Background()
			for b.Loop() {
				e, err := sandbox.NewEngine(ctx, sandbox.Options{CacheDir: testenv.CacheDir()})
				if err != nil {
					b.Fatal(err)
				}
				p, err := plugins.Load(ctx, e, spec)
				if err != nil {
					b.Fatal(err)
				}
				p.Close(ctx)
				e.Close(ctx)
			}
		})
	}
}
