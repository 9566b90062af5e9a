package harness

import (
	"context"
	"fmt"
	"time"
)

// journal is the C guest whose one tool makes count host calls of one kind in a task
// (testdata/c/journal.c): progress, task log lines, or checkpoints of size bytes.
var journal = Plugin{Name: "journal", Path: "testdata/wasm/journal.wasm", MemoryMiB: 16, Timeout: "10m"}

// Figure10 is what a task's journal costs its guest: one task log line and one
// checkpoint of 64 KiB and of 1 MiB, on the default store (SQLite, each write on disk
// before it returns) and in memory, beside a progress notification (no store write):
// every tools/call carries a progressToken, so the progress host call sends the
// client a notifications/progress, which the client reads (Client.Progress counts
// them, and the figure checks that all were sent).
func (e *Env) Figure10(ctx context.Context) (*Figure, error) {
	n := pick(e, 2000, 50)
	f := &Figure{N: 10, Title: "Task journal: a log line and a checkpoint, beside a progress notification",
		What: fmt.Sprintf("one task of `journal_repeat` (C guest, worker process) makes the same host call %d times in a row "+
			"(%d for 1 MiB checkpoints); the time per call from tools/call to the task's result (tasks/result), and the server's CPU "+
			"per call (its worker included), over stdio. A log line is 25 bytes; a checkpoint is base64 in the request, stored in one commit. "+
			"Every tools/call carries a progressToken.", n, n/10),
		Baseline:  "a progress notification from the same guest in the same run and store: a host call that writes nothing to the store and sends the client a notifications/progress (read by the client; the run checks that every one arrived).",
		Reproduce: "go run ./bench/cmd/benchall -figures 10"}
	ops := []struct {
		name, op string
		size     int
		count    int
	}{
		{"progress", "progress", 0, n},
		{"log line", "log", 0, n},
		{"checkpoint 64 KiB", "checkpoint", 64 << 10, n},
		{"checkpoint 1 MiB", "checkpoint", 1 << 20, max(n/10, 5)},
	}
	stores := []Variant{
		{Name: "SQLite store (default)", Store: "sqlite"},
		{Name: "memory store", Store: "memory"},
	}
	tokens := 0
	for rep := range e.Reps {
		e.logf("figure 10, repetition %d", rep+1)
		for _, v := range stores {
			s, err := e.Ours(v, "", journal)
			if err != nil {
				return nil, err
			}
			p, cs, err := e.open(ctx, s, Stdio, 1, Caps{})
			if err != nil {
				return nil, err
			}
			for _, o := range ops {
				var took time.Duration
				l, cpu, err := measure(p, func() (load, error) {
					tokens++
					sent := cs[0].Progress()
					start := time.Now()
					id, err := createTaskMeta(ctx, cs[0], "journal_repeat", map[string]any{"op": o.op, "count": o.count, "size": o.size},
						map[string]any{"progressToken": fmt.Sprintf("figure10-%d", tokens)})
					if err != nil {
						return load{}, err
					}
					var res struct {
						IsError bool `json:"isError"`
					}
					if err := cs[0].CallInto(ctx, "tasks/result", map[string]any{"taskId": id}, &res); err != nil {
						return load{}, err
					}
					if res.IsError {
						return load{}, fmt.Errorf("journal_repeat %s ended in an error result", o.op)
					}
					took = time.Since(start)
					// The server wrote each notification before the task's result, on
					// the same stdout: all have been read by now.
					if got := cs[0].Progress() - sent; o.op == "progress" && got != int64(o.count) {
						return load{}, fmt.Errorf("journal_repeat progress sent %d notifications/progress, want %d", got, o.count)
					}
					return load{Ops: int64(o.count), Took: took}, nil
				})
				if err != nil {
					e.closeAll(p, cs)
					return nil, fmt.Errorf("%s, %s: %w\n%s", v.Name, o.name, err, p.Stderr())
				}
				label := fmt.Sprintf("%s, %s", v.Name, o.name)
				f.add(label, "us/call", float64(took.Microseconds())/float64(l.Ops))
				f.add(label+", server CPU per call", "us CPU", cpu)
			}
			e.closeAll(p, cs)
		}
	}
	for _, v := range stores {
		base := fmt.Sprintf("%s, progress", v.Name)
		for _, o := range ops[1:] {
			label := fmt.Sprintf("%s, %s", v.Name, o.name)
			f.ratio(label+" / progress", label, base)
		}
	}
	f.Notes = append(f.Notes, "On SQLite every log line and checkpoint is its own commit (synchronous FULL: an fsync), so a guest that logs a line per step pays one commit per line; the memory rows are the cost without the disk.")
	return f, nil
}
