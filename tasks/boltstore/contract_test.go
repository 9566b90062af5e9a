package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (tasks.Store, func() tasks.Store) {
		s := open(t, filepath.Join(t.TempDir(), "tasks.db"))
		t.Cleanup(func() { s.Close() })
		return s, nil
	})
}
