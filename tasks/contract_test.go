package tasks_test

import (
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (tasks.Store, func() tasks.Store) {
		return tasks.NewMemoryStore(), nil
	})
}
