package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// probe calls tool probe with args and returns the text of its result.
func probe(m *sandbox.Module, args map[string]any) (string, error) {
	out, err := m.Call(context.Background(), call("probe", args), nil)
	if err != nil {
		return "", err
	}
	var res struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Content) != 1 {
		return "", fmt.Errorf("output %s: %v", out, err)
	}
	return res.Content[0].Text, nil
}

// isolationVariants are the traces the isolation guest leaves (testdata/c/isolation.c):
// canaries in static data, heap and stack on every call, and per variant in a grown
// page, a lowered stack pointer, a closed stdout, or a trap after all of them.
var isolationVariants = []struct {
	name string
	args map[string]any
	trap bool
}{
	{"plain", map[string]any{}, false},
	{"grow", map[string]any{"grow": true}, false},
	{"leak_sp", map[string]any{"leak_sp": true}, false},
	{"close_stdout", map[string]any{"close_stdout": true}, false},
	{"fail", map[string]any{"fail": true}, true},
	{"all", map[string]any{"grow": true, "leak_sp": true, "close_stdout": true}, false},
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
			fresh := checkIsolation(t, func(args map[string]any) (string, error) { return probe(m, args) })
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

// checkIsolation runs the isolation guest's variants through call, in sequence and
// concurrently, and fails t when a call sees anything but the first call's state.
func checkIsolation(t *testing.T, call func(map[string]any) (string, error)) string {
	t.Helper()
	first, err := call(map[string]any{"seq": 0})
	if err != nil {
		t.Fatalf("probe = %v", err)
	}
	fresh, _, _ := strings.Cut(first, " seq=")
	if !strings.HasPrefix(fresh, "found=0 pages=1 data=7 bss=0 sp=") || !strings.HasSuffix(fresh, " stdout=1") {
		t.Fatalf("probe = %q, want a fresh state", first)
	}
	check := func(i int, args map[string]any, trap bool) error {
		a := map[string]any{"seq": i}
		for k, v := range args {
			a[k] = v
		}
		got, err := call(a)
		if trap {
			var ge *sandbox.GuestError
			if !errors.As(err, &ge) || ge.Kind != sandbox.KindTrap {
				return fmt.Errorf("call %d %v = %q, %v; want a trap", i, args, got, err)
			}
			return nil
		}
		if want := fmt.Sprintf("%s seq=%d", fresh, i); got != want || err != nil {
			return fmt.Errorf("call %d %v = %q, %v; want %q", i, args, got, err, want)
		}
		return nil
	}
	for i := 1; i <= 60; i++ {
		v := isolationVariants[i%len(isolationVariants)]
		if err := check(i, v.args, v.trap); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for j := range 30 {
				i := 1000*(g+1) + j
				v := isolationVariants[(g+j)%len(isolationVariants)]
				if err := check(i, v.args, v.trap); err != nil {
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
	return fresh
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
