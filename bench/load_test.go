package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins/manifests"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// BenchmarkPluginLoad is loading one plugin on a warm compilation cache, as a server
// start does (a fresh engine each time, the cache directory warm): verify the pin,
// compile (a cache hit), check the imports, describe. It is what each plugin adds to
// start-up (figure 5 of docs/BENCHMARKS.md). "described" loads with a warm manifest
// cache too, as a server start does: the module is compiled and checked but not run.
func BenchmarkPluginLoad(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	host, err := manifests.HostID(exe)
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range []struct{ name, plugin, path string }{
		{"c", "textkit", "plugins/textkit/textkit.wasm"},
		{"go", "toolbox", "plugins/toolbox/toolbox.wasm"},
	} {
		for _, described := range []bool{false, true} {
			name := g.name
			if described {
				name += "/described"
			}
			b.Run(name, func(b *testing.B) {
				spec := testenv.Spec(b, g.plugin, g.path)
				if described {
					c, err := manifests.Open(manifests.Options{Dir: filepath.Join(b.TempDir(), "manifests"), Host: host})
					if err != nil {
						b.Fatal(err)
					}
					spec.Manifests = c
				}
				testenv.Load(b, testenv.Engine(b), spec) // warms the cache directories
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
					if described && p.Module.Instances() != 0 {
						b.Fatalf("%d instances at load, want 0", p.Module.Instances())
					}
					p.Close(ctx)
					e.Close(ctx)
				}
			})
		}
	}
}
