package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// BenchmarkLinearMemoryRSS holds N instances at once in one worker, each grown to its
// memory limit in 1 MiB steps (testdata/wat/memgrow.wat), and reports the worker's
// peak resident memory above its idle level beside N x memory_mib: what linear memory
// really costs. Each op is one such burst.
//
//	go test ./bench -run '^$' -bench LinearMemoryRSS -benchtime 3x
func BenchmarkLinearMemoryRSS(b *testing.B) {
	const memoryMiB = 64
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			sup, err := worker.NewSupervisor(worker.Options{CacheDir: testenv.CacheDir()})
			if err != nil {
				b.Fatal(err)
			}
			wasm, err := os.ReadFile(testenv.Path("testdata/wasm/memgrow.wasm"))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			m, err := sup.Load(ctx, worker.Spec{Name: "memgrow", Wasm: wasm,
				Limits: sandbox.Limits{MemoryMiB: memoryMiB, Timeout: 5 * time.Minute}})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(ctx)
			idle := procKiB(b, m.PID(), "VmRSS")
			for b.Loop() {
				h := testenv.NewBarrier(n)
				var calls sync.WaitGroup
				for range n {
					calls.Go(func() {
						if _, err := m.Call(ctx, []byte(`{"tool":"grow","arguments":{}}`), h); err != nil {
							b.Error(err)
						}
					})
				}
				calls.Wait()
			}
			peak := procKiB(b, m.PID(), "VmHWM")
			b.ReportMetric(float64(peak-idle)/1024, "peak-MiB")
			b.ReportMetric(float64(n*memoryMiB), "limit-MiB")
			b.ReportMetric(float64(peak-idle)/1024/float64(n*memoryMiB), "peak/limit")
		})
	}
}

func procKiB(b *testing.B, pid int, field string) int64 {
	b.Helper()
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(s)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kib int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kib); err != nil {
				b.Fatal(err)
			}
			return kib
		}
	}
	b.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}
