package worker_test

import (
	"context"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// TestIsolation: through a worker process, as in process (sandbox's TestIsolation),
// nothing a call of the isolation guest leaves (canaries in static data, heap, stack
// and grown memory, a lowered stack pointer, a closed stdout, a trap) reaches a later
// call, in sequence and concurrently; nor do the globals of globalleak or the table
// of tableleak.
func TestIsolation(t *testing.T) {
	ctx := context.Background()
	m := loadSpec(t, worker.Options{}, worker.Spec{Name: "test", Wasm: wasm(t, "testdata/wasm/isolation.wasm"), Processes: 1})
	probe := func(m *worker.Module, args map[string]any) (string, error) {
		return testenv.ProbeText(m.Call(ctx, input("probe", args), nil))
	}
	testenv.CheckIsolation(t, func(args map[string]any) (string, error) { return probe(m, args) })
	if m.Starts() != 1 || m.Live() != 0 {
		t.Errorf("Starts() = %d, Live() = %d; want 1 worker, no instance left", m.Starts(), m.Live())
	}

	for _, tt := range []struct{ path, want string }{
		{"testdata/wasm/globalleak.wasm", "a=0 b=0 c=0"},
		{"testdata/wasm/tableleak.wasm", "a=0 b=0 c=0 t=0"},
	} {
		g := loadSpec(t, worker.Options{}, worker.Spec{Name: "test", Wasm: wasm(t, tt.path), Processes: 1})
		for range 20 {
			if got, err := probe(g, nil); got != tt.want || err != nil {
				t.Fatalf("%s: probe = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		}
	}
}
