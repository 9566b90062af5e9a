package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
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
		out, err := m.Call(ctx, input("probe", args), nil)
		if err != nil {
			return "", err
		}
		var res struct{ Content []struct{ Text string } }
		if err := json.Unmarshal(out, &res); err != nil || len(res.Content) != 1 {
			return "", fmt.Errorf("output %s: %v", out, err)
		}
		return res.Content[0].Text, nil
	}
	first, err := probe(m, map[string]any{"seq": 0})
	fresh, _, _ := strings.Cut(first, " seq=")
	if err != nil || !strings.HasPrefix(fresh, "found=0 pages=1 data=7 bss=0 sp=") || !strings.HasSuffix(fresh, " stdout=1") {
		t.Fatalf("probe = %q, %v; want a fresh state", first, err)
	}
	variants := []map[string]any{
		{}, {"grow": true}, {"leak_sp": true}, {"close_stdout": true}, {"fail": true},
		{"grow": true, "leak_sp": true, "close_stdout": true},
	}
	check := func(i int, v map[string]any) error {
		args := map[string]any{"seq": i}
		for k, x := range v {
			args[k] = x
		}
		got, err := probe(m, args)
		if v["fail"] == true {
			var ge *sandbox.GuestError
			if !errors.As(err, &ge) || ge.Kind != sandbox.KindTrap {
				return fmt.Errorf("call %d %v = %q, %v; want a trap", i, v, got, err)
			}
			return nil
		}
		if want := fmt.Sprintf("%s seq=%d", fresh, i); got != want || err != nil {
			return fmt.Errorf("call %d %v = %q, %v; want %q", i, v, got, err, want)
		}
		return nil
	}
	for i := 1; i <= 30; i++ {
		if err := check(i, variants[i%len(variants)]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for g := range 6 {
		wg.Go(func() {
			for j := range 20 {
				if err := check(1000*(g+1)+j, variants[(g+j)%len(variants)]); err != nil {
					errs <- err
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
