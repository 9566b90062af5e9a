package boltstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/boltstore"
)

// FuzzOpen: whatever bytes the store file holds, Open returns a store or an error; it
// never faults or panics, and a store it returns can be read.
func FuzzOpen(f *testing.F) {
	good := storeFile(f)
	f.Add(good)
	for _, n := range []int{0, 100, 4096, 8192, 3 * 4096, len(good) / 2} {
		f.Add(good[:n])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "tasks.db")
		os.Remove(path)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := boltstore.Open(path)
		if err != nil {
			return
		}
		s.List(context.Background(), "local", "", 1000)
		s.Close()
	})
}
