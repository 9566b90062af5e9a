package sqlstore_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
)

// BenchmarkManager is tasks created and completed per second by a Manager on the
// store, 16 requesters each polling Get until completed: the store's share of a task,
// on SQLite and on PostgreSQL (a server the benchmark starts, on a unix socket).
func BenchmarkManager(b *testing.B) {
	for _, e := range engines(b) {
		b.Run(e.name, func(b *testing.B) {
			ctx := context.Background()
			s := instances(b, e)()
			m := tasks.NewManager(tasks.Options{Store: s, MaxPerOwner: 1000, CreateWindow: sqlstore.CreateWindow})
			defer m.Close(ctx)
			var n atomic.Int64
			n.Store(int64(b.N))
			start := time.Now()
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for n.Add(-1) >= 0 {
						t, err := m.Start(ctx, tasks.Requester{Owner: "local"}, 0, func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
							return json.RawMessage(`{"content":[{"type":"text","text":"pong"}]}`), "", nil
						})
						if err != nil {
							b.Error(err)
							return
						}
						for {
							got, _ := m.Get(ctx, "local", t.ID)
							if got.Status == tasks.Completed {
								break
							}
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
		})
	}
}
