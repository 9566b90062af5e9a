package tasks_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// printOps prints each store operation as it ends.
type printOps struct{}

func (printOps) StoreOp(_ context.Context, op string, _ time.Time, err error) {
	fmt.Println(op, err)
}

// Observe reports every operation on a store, and keeps what the store is: an
// observed MemoryStore is not Shared, an observed sqlstore is.
func ExampleObserve() {
	ctx := context.Background()
	s := tasks.Observe(tasks.NewMemoryStore(), printOps{})
	_ = s.Put(ctx, tasks.Task{ID: "t1", Owner: "local", Status: tasks.Working})
	_, _ = s.Get(ctx, "t2")
	_, shared := s.(tasks.Shared)
	fmt.Println("shared:", shared)
	// Output:
	// put <nil>
	// get task not found
	// shared: false
}
