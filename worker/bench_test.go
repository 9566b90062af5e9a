package worker_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// BenchmarkCall is sync calls of the C guest textkit's ping through the plugin's
// workers (two, the default) from 16 goroutines at once, as a server under load makes
// them. Besides the time per call it reports the CPU time per call of this process
// (the supervisor's side of the boundary, with the benchmark's own loop) and of the
// worker processes: the boundary's cost on both sides.
func BenchmarkCall(b *testing.B) {
	m := loadSpec(b, worker.Options{GCPercent: 800}, worker.Spec{Name: "textkit",
		Wasm: wasm(b, "plugins/textkit/textkit.wasm"), Limits: sandbox.Limits{}})
	in := input("ping", map[string]any{})
	ctx := context.Background()
	if _, err := m.Call(ctx, in, nil); err != nil { // warm up every worker
		b.Fatal(err)
	}
	pids := m.PIDs()
	for deadline := time.Now().Add(time.Minute); slices.Contains(pids, 0) && time.Now().Before(deadline); pids = m.PIDs() {
		time.Sleep(10 * time.Millisecond) // the second worker starts in the background
	}
	server, workers := selfCPU(), childrenCPU(b, pids)
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := m.Call(ctx, in, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(selfCPU()-server)/n, "server-ns/op")
	b.ReportMetric(float64(childrenCPU(b, pids)-workers)/n, "worker-ns/op")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childrenCPU is the CPU time (user + system) the processes have used, from
// /proc/<pid>/stat (Linux; the benchmark is skipped elsewhere).
func childrenCPU(b *testing.B, pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			b.Skipf("worker CPU time: %v", err)
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		// utime and stime are fields 14 and 15 of stat(5), 12 and 13 after the name.
		for _, f := range fields[11:13] {
			ticks, _ := strconv.ParseInt(f, 10, 64)
			total += time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
		}
	}
	return total
}

// BenchmarkCallSequential is one call at a time of a C guest's cheapest tool (textkit
// ping) through one worker process: the frames both ways and the call in the worker's
// sandbox.
func BenchmarkCallSequential(b *testing.B) {
	m := loadSpec(b, worker.Options{}, worker.Spec{Name: "test", Wasm: wasm(b, "plugins/textkit/textkit.wasm"), Processes: 1})
	in := input("ping", map[string]any{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Call(ctx, in, nil); err != nil {
			b.Fatal(err)
		}
	}
}
