package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// A worker that runs out of memory says so to every call it held, and the log gets one
// line about it, not a dump of every goroutine. The worker is sized for one call of
// 512 MiB; each call holds a 458 MiB table on the Go heap (untouched: address space,
// not memory), so two dozen of them at once exhaust its address space.
func TestWorkerOutOfMemory(t *testing.T) {
	if worker.RaceEnabled {
		t.Skip("under the race detector workers have no address-space limit")
	}
	var logs testenv.SyncBuffer
	s := supervisor(t, worker.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	m, err := s.LoadSized(ctx, worker.Spec{Name: "test", Wasm: wasm(t, "testdata/wasm/tablefill.wasm"),
		Limits: sandbox.Limits{MemoryMiB: 512}}, 1)
	if err != nil {
		t.Fatalf("LoadSized(tablefill) = %v", err)
	}
	defer m.Close(ctx)
	const calls = 24
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { _, errs[i] = m.Call(ctx, input("hold", nil), &recorder{}) })
	}
	wg.Wait()
	for i, err := range errs {
		var ge *sandbox.GuestError
		if !errors.As(err, &ge) || ge.Kind != sandbox.KindOutOfMemory || !strings.Contains(err.Error(), `plugin "test" ran out of memory`) {
			t.Errorf("Call %d = %v, want plugin \"test\" ran out of memory", i, err)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "worker ran out of memory"); n != 1 {
		t.Errorf("log has %d lines about running out of memory, want 1:\n%s", n, out)
	}
	if strings.Contains(out, "goroutine ") {
		t.Errorf("log holds a goroutine dump:\n%.2000s", out)
	}
	t.Logf("first call: %v", errs[0])
}
