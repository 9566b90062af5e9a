package sandbox_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// A table is counted toward memory_mib: a table bomb is refused at load, naming the
// table and the bound, and a table without a maximum cannot grow.
func TestTables(t *testing.T) {
	ctx := context.Background()
	t.Run("bomb refused at load", func(t *testing.T) {
		_, err := engine.Load(ctx, sandbox.Spec{Name: "bomb", Wasm: wasm(t, "testdata/wasm/tablebomb.wasm"),
			Limits: sandbox.Limits{MemoryMiB: 16}})
		want := "table 0 declares no maximum, so it is held to its minimum of 100000000 elements (763 MiB at 8 bytes each), which with the rest of its memory exceeds the memory limit of 16 MiB"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `plugin "bomb"`) {
			t.Fatalf("Load(tablebomb) = %v, want an error containing %q", err, want)
		}
	})
	t.Run("grow without maximum refused", func(t *testing.T) {
		m := load(t, "testdata/wasm/tablegrow.wasm", sandbox.Limits{MemoryMiB: 16}, sandbox.Grants{})
		out, err := m.Call(ctx, call("grow", nil), nil)
		if err != nil || !strings.Contains(string(out), "refused") {
			t.Fatalf("Call(grow) = %s, %v, want table.grow refused", out, err)
		}
	})
}

// Linear memory grows in place up to the limit less the tables, and no further.
func TestLinearMemoryLimit(t *testing.T) {
	tests := []struct {
		path      string
		memoryMiB int
		want      string // pages at the end
	}{
		{"testdata/wasm/memgrow.wasm", 4, `"text":"49"`},   // 1 page + 3 steps of 16 pages
		{"testdata/wasm/memgrow.wasm", 32, `"text":"497"`}, // 1 + 31*16
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			m := load(t, tt.path, sandbox.Limits{MemoryMiB: tt.memoryMiB}, sandbox.Grants{})
			for range 3 { // memory is given back after each call: every call reaches the limit
				out, err := m.Call(context.Background(), call("grow", nil), nil)
				if err != nil || !strings.Contains(string(out), tt.want) {
					t.Fatalf("Call(grow) = %s, %v, want %s", out, err, tt.want)
				}
			}
		})
	}
}

// After a burst of calls the engine gives memory back to the operating system once,
// when the last instance has closed.
func TestReleaseAfterBurst(t *testing.T) {
	ctx := context.Background()
	e, err := sandbox.NewEngine(ctx, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Load(ctx, sandbox.Spec{Name: "grow", Wasm: wasm(t, "testdata/wasm/memgrow.wasm"), Limits: sandbox.Limits{MemoryMiB: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	const calls = 16
	h := testenv.NewBarrier(calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			if _, err := m.Call(ctx, call("grow", nil), h); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for deadline := time.Now().Add(time.Minute); e.Releases() == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := e.Releases(); n != 1 {
		t.Fatalf("Releases() = %d after the burst, want 1", n)
	}
}

// parkedHost answers every request once release closes, and says on asked when one
// arrived.
type parkedHost struct {
	asked   chan struct{}
	release chan struct{}
}

func (*parkedHost) Log(context.Context, sandbox.Level, string)         {}
func (*parkedHost) Progress(context.Context, float64, float64, string) {}
func (h *parkedHost) Request(ctx context.Context, _ string, _ []byte) ([]byte, error) {
	h.asked <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return nil, sandbox.ErrUnavailable
}

// LiveMemory counts the linear memory of the instances live now, grown memory
// included: two calls parked on a request after growing to the limit hold 49 pages
// each, and nothing once they end.
func TestLiveMemory(t *testing.T) {
	m := load(t, "testdata/wasm/memgrow.wasm", sandbox.Limits{MemoryMiB: 4}, sandbox.Grants{})
	if n := m.LiveMemory(); n != 0 {
		t.Fatalf("LiveMemory() = %d before any call, want 0", n)
	}
	h := &parkedHost{asked: make(chan struct{}), release: make(chan struct{})}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := m.Call(context.Background(), call("grow", nil), h); err != nil {
				t.Error(err)
			}
		})
	}
	<-h.asked
	<-h.asked
	if got, want := m.LiveMemory(), int64(2*49*65536); got != want {
		t.Errorf("LiveMemory() = %d with two calls parked, want %d", got, want)
	}
	close(h.release)
	wg.Wait()
	if n := m.LiveMemory(); n != 0 {
		t.Errorf("LiveMemory() = %d after the calls, want 0", n)
	}
}
