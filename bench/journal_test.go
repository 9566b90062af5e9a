package bench

import (
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// BenchmarkTaskJournal is the cost of one host call of a task's guest, as the guest
// sees it, over stdio to the real binary: a progress notification (the baseline: the
// tools/call carries a progressToken, so each report is sent to the client as a
// notifications/progress, which the client reads and the benchmark counts), a line
// appended to the task's log, and checkpoints of 64 KiB and 1 MiB, on the default
// store (SQLite, every write on disk before it returns) and in memory. One task makes
// b.N calls (at most 100,000, and 10,000 progress reports, the ABI's limit per call);
// ns/op is the task's run time per call.
func BenchmarkTaskJournal(b *testing.B) {
	for _, store := range []string{"sqlite", "memory"} {
		for _, c := range []struct {
			name string
			op   string
			size int
		}{
			{"progress", "progress", 0},
			{"log_line", "log", 0},
			{"checkpoint_64KiB", "checkpoint", 64 << 10},
			{"checkpoint_1MiB", "checkpoint", 1 << 20},
		} {
			b.Run(store+"/"+c.name, func(b *testing.B) {
				client := stdioServerOf(b, store, testenv.Spec(b, "journal", "testdata/wasm/journal.wasm"))
				n := min(b.N, 100_000)
				if c.op == "progress" {
					n = min(n, 10_000)
				}
				b.ResetTimer()
				start := time.Now()
				task := client.CreateTask("journal_repeat", map[string]any{"op": c.op, "count": n, "size": c.size}, map[string]any{},
					map[string]any{"progressToken": "journal"})
				var res struct {
					IsError bool `json:"isError"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				}
				client.MustCall("tasks/result", map[string]any{"taskId": task.TaskID}, &res)
				elapsed := time.Since(start)
				b.StopTimer()
				if res.IsError {
					b.Fatalf("journal_repeat %s: %+v", c.op, res.Content)
				}
				// Each notification was written before the task's result, on the same
				// stdout: all have been read by now.
				if got := len(client.NotificationsOf("notifications/progress")); c.op == "progress" && got != n {
					b.Fatalf("journal_repeat progress: %d notifications/progress, want %d", got, n)
				}
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/call")
				b.ReportMetric(0, "ns/op")
				if c.size > 0 {
					b.SetBytes(int64(c.size))
				}
			})
		}
	}
}
