package bench

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// The benchmark binary is also the worker binary.
func TestMain(m *testing.M) {
	if worker.IsWorker(os.Args) {
		os.Exit(worker.Main())
	}
	os.Exit(m.Run())
}

// BenchmarkIsolation is one call through plugins.Tool.Call with the plugin in this
// process (trusted) and in a worker process, side by side: the difference is the cost
// of the process boundary per call. "spawn" starts a worker per call instead, the
// alternative to keeping one per plugin.
func BenchmarkIsolation(b *testing.B) {
	sup, err := worker.NewSupervisor(worker.Options{CacheDir: testenv.CacheDir(), GCPercent: 800}) // as the server sets it for its workers
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range guests {
		for _, mode := range []string{"inprocess", "worker", "spawn"} {
			b.Run(g.name+"/"+mode, func(b *testing.B) {
				if mode == "spawn" && g.name == "go" && testing.Short() {
					b.Skip("slow")
				}
				spec := testenv.Spec(b, g.plugin, g.path)
				if mode != "inprocess" {
					spec.Workers = sup
				}
				p := testenv.Load(b, testenv.Engine(b), spec)
				tool := p.Tools[slices.IndexFunc(p.Tools, func(t *plugins.Tool) bool { return t.GuestName == g.tool })]
				lat := newLatencies(b)
				for b.Loop() {
					start := time.Now()
					if mode == "spawn" {
						p = testenv.Load(b, testenv.Engine(b), spec)
						tool = p.Tools[slices.IndexFunc(p.Tools, func(t *plugins.Tool) bool { return t.GuestName == g.tool })]
					}
					if _, err := tool.Call(context.Background(), json.RawMessage(g.args), nil); err != nil {
						b.Fatal(err)
					}
					if mode == "spawn" {
						p.Close(context.Background())
					}
					lat.add(time.Since(start))
				}
				lat.report()
			})
		}
	}
}
