package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
)

// Two server processes on one data_dir are two instances of one store: a task one of
// them runs is answered for by the other.
func Example() {
	dir, _ := os.MkdirTemp("", "sqlstore")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "tasks.sqlite")
	a, err := sqlstore.Open(ctx, path, sqlstore.Options{})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := sqlstore.Open(ctx, path, sqlstore.Options{})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	ma := tasks.NewManager(tasks.Options{Store: a})
	defer ma.Close(ctx)
	mb := tasks.NewManager(tasks.Options{Store: b})
	defer mb.Close(ctx)

	t, err := ma.Start(ctx, tasks.Requester{Owner: "local"}, 0, func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		return json.RawMessage(`{"ok":true}`), "", nil
	})
	if err != nil {
		panic(err)
	}
	done, err := mb.Wait(ctx, "local", t.ID) // through the other instance
	fmt.Println(done.Status, string(done.Result), err)
	// Output: completed {"ok":true} <nil>
}
