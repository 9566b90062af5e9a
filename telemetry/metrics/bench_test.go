package metrics

import (
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// BenchmarkCallMetrics is the metrics work of one sync tools/call of a C guest, 16
// callers at once as in figure 9: the request, the tool call and its report.
func BenchmarkCallMetrics(b *testing.B) {
	m := New(nil)
	rep := &sandbox.Report{Queue: time.Microsecond, Instantiate: time.Microsecond, Run: 80 * time.Microsecond, MemoryBytes: 131072,
		HostCalls: [sandbox.NumHostCalls]uint32{sandbox.HostLog: 1}}
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request("tools/call", "2025-11-25", "stdio", 150*time.Microsecond)
			m.ToolCall("textkit", "textkit_ping", OutcomeOK, 100*time.Microsecond)
			m.Report("textkit", rep)
		}
	})
}
