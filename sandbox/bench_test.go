package sandbox_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// BenchmarkCall is one in-process call of a C guest's cheapest tool (textkit ping):
// the instance, the host functions, the output checks; no MCP. "kept" reuses restored
// instances; "fresh" has a directory grant, which makes every call instantiate anew.
func BenchmarkCall(b *testing.B) {
	for _, bc := range []struct {
		name   string
		grants sandbox.Grants
	}{
		{"kept", sandbox.Grants{}},
		{"fresh", sandbox.Grants{Dirs: []sandbox.Dir{{Host: b.TempDir(), Guest: "/tmp"}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := load(b, "plugins/textkit/textkit.wasm", sandbox.Limits{}, bc.grants)
			in := call("ping", map[string]any{})
			ctx := context.Background()
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if _, err := m.Call(ctx, in, nil); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time per call says more than wall time on a machine shared with
			// other work.
			b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
