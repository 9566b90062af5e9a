package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	// One worker: with two, calls made while the second one starts spread over both,
	// and half of them fit in one worker's address space (the calls then wait for an
	// answer forever; CI saw it).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := s.LoadSized(ctx, worker.Spec{Name: "test", Wasm: wasm(t, "testdata/wasm/tablefill.wasm"),
		Limits: sandbox.Limits{MemoryMiB: 512}, Processes: 1}, 1)
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

// After a burst of 120 concurrent Go-guest calls the worker gives its memory back: its
// resident memory returns to within 20% of what it was before the burst. (Linear
// memory is unmapped as each instance closes; the Go heap the instances used is
// returned once the burst is over.)
func TestMemoryReturnsAfterBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("a burst of 120 Go guests")
	}
	if worker.RaceEnabled {
		// The race detector's shadow of every heap page once used stays resident: a
		// race-enabled worker held 757 MiB after the burst (117 MiB before), whatever
		// the heap gave back.
		t.Skip("under the race detector resident memory is not given back")
	}
	ctx := context.Background()
	// A generous time limit: 120 Go guests at once on a loaded machine of 2 cores.
	m := load(t, "testdata/wasm/memhog.wasm", sandbox.Limits{Timeout: 5 * time.Minute})
	if _, err := m.Call(ctx, input("hog", map[string]int{"mib": 4}), nil); err != nil {
		t.Fatal(err)
	}
	pid := m.PID()
	baseline := rssKiB(t, pid)
	const calls = 120
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Go(func() {
			if _, err := m.Call(ctx, input("hog", map[string]int{"mib": 4}), nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Call(hog) = %v", err)
	}
	peak, after := procStatusKiB(t, pid, "VmHWM"), rssKiB(t, pid)
	deadline := time.Now().Add(60 * time.Second)
	for after > baseline*12/10 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		after = rssKiB(t, pid)
	}
	t.Logf("worker RSS: %d MiB before the burst, peak %d MiB, %d MiB after it (%d calls)", baseline>>10, peak>>10, after>>10, calls)
	if after > baseline*12/10 {
		t.Errorf("worker RSS = %d MiB 60 s after the burst, want within 20%% of %d MiB", after>>10, baseline>>10)
	}
	if m.PID() != pid {
		t.Errorf("the worker was restarted during the burst")
	}
}

func rssKiB(t *testing.T, pid int) int64 { return procStatusKiB(t, pid, "VmRSS") }

func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kib int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kib)
			return kib
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// Calls beyond what a worker is sized for fail as out of memory, each on its own, and
// the worker lives on: every instance reserves its whole memory_mib of address space
// before it starts, so the reservation, not the Go runtime, is what runs out.
func TestCallsBeyondThePlanFailAlone(t *testing.T) {
	if worker.RaceEnabled {
		t.Skip("under the race detector workers have no address-space limit")
	}
	ctx := context.Background()
	s := supervisor(t, worker.Options{})
	m, err := s.LoadSized(ctx, worker.Spec{Name: "test", Wasm: wasm(t, "testdata/wasm/asker.wasm"),
		Limits: sandbox.Limits{MemoryMiB: 4096}}, 1)
	if err != nil {
		t.Fatalf("LoadSized(asker) = %v", err)
	}
	defer m.Close(ctx)
	pid := m.PID()
	const calls = 16
	h := &holder{release: make(chan struct{})}
	errs := make([]error, calls)
	var finished atomic.Int64
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			_, errs[i] = m.Call(ctx, input("ask", nil), h)
			finished.Add(1)
		})
	}
	for deadline := time.Now().Add(2 * time.Minute); h.asked.Load()+finished.Load() < calls && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	close(h.release)
	wg.Wait()
	var ok, refused int
	for i, err := range errs {
		var ge *sandbox.GuestError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &ge) && ge.Kind == sandbox.KindOutOfMemory && strings.Contains(err.Error(), "no room for another instance"):
			refused++
		default:
			t.Errorf("Call %d = %v, want success or out of memory", i, err)
		}
	}
	t.Logf("%d calls held their 4 GiB at once, %d refused; first refusal: %v", ok, refused, errs[slices.IndexFunc(errs, func(err error) bool { return err != nil })])
	if ok == 0 || refused == 0 {
		t.Errorf("%d calls succeeded and %d were refused, want some of each", ok, refused)
	}
	if m.PID() != pid {
		t.Errorf("the worker was restarted")
	}
}

// holder is a Host whose requests wait until release is closed.
type holder struct {
	asked   atomic.Int64
	release chan struct{}
}

func (*holder) Log(context.Context, sandbox.Level, string)         {}
func (*holder) Progress(context.Context, float64, float64, string) {}
func (h *holder) Request(ctx context.Context, _ string, _ []byte) ([]byte, error) {
	h.asked.Add(1)
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return []byte(`{"action":"accept","content":{}}`), nil
}
