package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// ProbeText is the text of a probe tool's one-item result (the isolation guests,
// testdata/c/isolation.c and testdata/wat/*leak.wat), or the call's error.
func ProbeText(out []byte, err error) (string, error) {
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

// CheckIsolation runs the isolation guest's variants through probe (its tool "probe"
// with args, in process or through a worker), 60 calls in sequence and 8 x 30
// concurrently, and fails t when a call sees anything but a fresh instance's state,
// which the first call reports and CheckIsolation returns.
func CheckIsolation(t *testing.T, probe func(args map[string]any) (string, error)) string {
	t.Helper()
	first, err := probe(map[string]any{"seq": 0})
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
		got, err := probe(a)
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
				v := isolationVariants[(g+j)%len(isolationVariants)]
				if err := check(1000*(g+1)+j, v.args, v.trap); err != nil {
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
