package sandbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// probe calls tool probe with args and returns the text of its result.
func probe(m *sandbox.Module, args map[string]any) (string, error) {
	return testenv.ProbeText(m.Call(context.Background(), call("probe", args), nil))
}

// TestIsolation: whatever a call of the isolation guest leaves behind (canaries in
// static data, heap, stack and grown memory, a lowered stack pointer, a closed
// stdout, a trap), the next call sees a fresh instance's state, in sequence and
// concurrently, whether instances are reused (no grants) or not (a directory grant).
func TestIsolation(t *testing.T) {
	for _, tt := range []struct {
		name   string
		grants sandbox.Grants
		reused bool
	}{
		{"kept", sandbox.Grants{}, true},
		{"fresh", sandbox.Grants{Dirs: []sandbox.Dir{{Host: t.TempDir(), Guest: "/tmp"}}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := load(t, "testdata/wasm/isolation.wasm", sandbox.Limits{}, tt.grants)
			fresh := testenv.CheckIsolation(t, func(args map[string]any) (string, error) { return probe(m, args) })
			t.Logf("fresh state: %s", fresh)
			if got := m.Reused() > 0; got != tt.reused {
				t.Errorf("Reused() = %d, want reuse %v", m.Reused(), tt.reused)
			}
			if n := m.Live(); n != 0 {
				t.Errorf("Live() = %d after the calls, want 0", n)
			}
		})
	}
}

// TestIsolationGlobalsAndTables: non-exported mutable globals of every restorable
// type are restored between calls (globalleak), and a module that sets a table entry
// (tableleak) gets a fresh instance per call, so neither globals nor the table
// survive.
func TestIsolationGlobalsAndTables(t *testing.T) {
	for _, tt := range []struct {
		path, want string
		reused     bool
	}{
		{"testdata/wasm/globalleak.wasm", "a=0 b=0 c=0", true},
		{"testdata/wasm/tableleak.wasm", "a=0 b=0 c=0 t=0", false},
	} {
		t.Run(tt.path, func(t *testing.T) {
			m := load(t, tt.path, sandbox.Limits{}, sandbox.Grants{})
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Go(func() {
					for range 25 {
						if got, err := probe(m, nil); got != tt.want || err != nil {
							errs <- fmt.Errorf("probe = %q, %v; want %q", got, err, tt.want)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if got := m.Reused() > 0; got != tt.reused {
				t.Errorf("Reused() = %d, want reuse %v", m.Reused(), tt.reused)
			}
		})
	}
}
