package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// client is a sandbox.Host for one client: its calls' affinity key, and the answer to
// their requests for input.
type client struct {
	key    string
	asked  chan<- string // receives the key when a call asks; may be nil
	answer func(ctx context.Context) ([]byte, error)
}

var _ worker.Affinity = (*client)(nil)

func (c *client) Affinity() string                                   { return c.key }
func (c *client) Log(context.Context, sandbox.Level, string)         {}
func (c *client) Progress(context.Context, float64, float64, string) {}
func (c *client) Request(ctx context.Context, _ string, _ []byte) ([]byte, error) {
	if c.asked != nil {
		c.asked <- c.key
	}
	return c.answer(ctx)
}

// waitFor polls cond until it holds; it gives up after a minute ("it ends at all").
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
	}
}

func allRunning(m *worker.Module) func() bool {
	return func() bool {
		for _, pid := range m.PIDs() {
			if pid == 0 {
				return false
			}
		}
		return true
	}
}

// A call that does not stop gets its worker killed, and with it only the calls in that
// worker: the calls of other clients, in the plugin's other worker, complete.
func TestHungCallKillsOnlyItsWorker(t *testing.T) {
	for _, tc := range []struct {
		name        string
		waitWorkers bool // the calls start once both workers run, or right after Load
	}{
		{"workers_running", true},
		// The second worker still starts in the background: the calls keyed to it must
		// wait for it, not join the first worker (and die with it).
		{"calls_right_after_load", false},
	} {
		t.Run(tc.name, func(t *testing.T) { testHungCallKillsOnlyItsWorker(t, tc.waitWorkers) })
	}
}

func testHungCallKillsOnlyItsWorker(t *testing.T, waitWorkers bool) {
	ctx := context.Background()
	m := loadSpec(t, worker.Options{}, worker.Spec{Name: "test", Wasm: wasm(t, "testdata/wasm/hangunanswered.wasm"),
		Processes: 2}) // the default time limit: only cancellation ends the hung call
	if waitWorkers {
		waitFor(t, "both workers run", allRunning(m))
	}

	// Eight clients each start a call that waits for its answer.
	release := make(chan struct{})
	asked := make(chan string, 8)
	type outcome struct {
		key string
		out []byte
		err error
	}
	results := make(chan outcome, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		c := &client{key: fmt.Sprintf("session:%d", i), asked: asked, answer: func(ctx context.Context) ([]byte, error) {
			select {
			case <-release:
				return []byte(`{"action":"accept","content":{}}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}
		wg.Go(func() {
			out, err := m.Call(ctx, input("ask", nil), c)
			results <- outcome{c.key, out, err}
		})
	}
	for range 8 {
		<-asked
	}
	before := m.PIDs()
	// Client 0 makes a call that does not stop when cancelled: its worker is killed.
	hung := &client{key: "session:0", answer: func(context.Context) ([]byte, error) { return nil, sandbox.ErrUnavailable }}
	hctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := m.Call(hctx, input("ask", nil), hung)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindCanceled || !strings.Contains(ge.Message, "worker process was killed") {
		t.Fatalf("hung Call(ask) = %v; want a cancellation error saying its worker was killed", err)
	}
	close(release)
	wg.Wait()
	close(results)
	failed, completed := map[string]string{}, 0
	for r := range results {
		switch {
		case r.err == nil && strings.Contains(string(r.out), "answered"):
			completed++
		case errors.As(r.err, &ge) && ge.Kind == sandbox.KindAborted && strings.Contains(ge.Message, "did not stop"):
			failed[r.key] = ge.Message
		default:
			t.Errorf("Call(ask) of %s = %s, %v; want it answered, or failed because its worker was killed", r.key, r.out, r.err)
		}
	}
	if _, ok := failed["session:0"]; !ok {
		t.Errorf("the hung call's own client's other call survived its worker's kill: failed %v", failed)
	}
	if completed == 0 {
		t.Errorf("no call of another client completed; failed: %v", failed)
	}
	t.Logf("%d calls completed, %d failed with the killed worker", completed, len(failed))
	// The killed worker is replaced in the background; the other one still runs.
	waitFor(t, "the killed worker is restarted", allRunning(m))
	after := m.PIDs()
	changed := 0
	for i := range after {
		if after[i] != before[i] {
			changed++
		}
	}
	if changed != 1 {
		t.Errorf("PIDs %v -> %v; want exactly one worker replaced", before, after)
	}
}

// A worker killed while idle (as by the OOM killer) is restarted at once, without
// waiting for a call, and a call made right after the kill succeeds.
func TestIdleWorkerKilled(t *testing.T) {
	ctx := context.Background()
	m := load(t, "plugins/textkit/textkit.wasm", sandbox.Limits{})
	in := input("sha256", map[string]string{"text": "hello"})
	for round := range 3 {
		pid := m.PID()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if out, err := m.Call(ctx, in, nil); err != nil {
			t.Fatalf("round %d: Call right after SIGKILL of the idle worker = %s, %v; want it served", round, out, err)
		}
	}
	pid, starts := m.PID(), m.Starts()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed worker is replaced without a call", func() bool { p := m.PID(); return p != 0 && p != pid })
	if m.Starts() != starts+1 {
		t.Errorf("Starts() = %d, want %d", m.Starts(), starts+1)
	}
}

// A worker that keeps dying is restarted with a growing delay, not in a tight loop.
func TestCrashLoopBacksOff(t *testing.T) {
	m := load(t, "plugins/textkit/textkit.wasm", sandbox.Limits{})
	start := time.Now()
	for range 5 {
		pid := m.PID()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the worker is replaced", func() bool { p := m.PID(); return p != 0 && p != pid })
	}
	// Delays after each quick death: 0, 100, 200, 400, 800 ms.
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Errorf("five quick deaths were restarted within %v; want the delays (at least 1.5s)", took)
	}
	if m.Starts() != 6 {
		t.Errorf("Starts() = %d, want 6", m.Starts())
	}
}

// Calls with a directory grant do not hold a descriptor per instance and grant: many
// more Go-guest instances run at once than the worker's open-file limit would allow
// otherwise (before: "plugin crashed: ... _initialize failed: input/output error", or
// an instance failing with EIO, once each instance held both grants open).
func TestGrantsDoNotCostDescriptorsPerInstance(t *testing.T) {
	ctx := context.Background()
	dirs := []sandbox.Dir{{Host: t.TempDir(), Guest: "/docs"}, {Host: t.TempDir(), Guest: "/notes", Writable: true}}
	// MaxConcurrent 2 with two grants: an open-file limit of 64 + 2 x (2 + 4) = 76. (A
	// generous time limit: the race detector makes a Go guest's start slow.)
	m := loadSpec(t, worker.Options{}, worker.Spec{Name: "toolbox", Wasm: wasm(t, "plugins/toolbox/toolbox.wasm"),
		Grants: sandbox.Grants{Dirs: dirs}, Limits: sandbox.Limits{Timeout: 5 * time.Minute}, Processes: 1, MaxConcurrent: 2})
	// Each call looks at /notes, then waits for its confirmation: all are alive at once.
	const calls = 40
	release := make(chan struct{})
	asked := make(chan string, calls)
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		c := &client{asked: asked, answer: func(ctx context.Context) ([]byte, error) {
			select {
			case <-release:
				return []byte(`{"action":"accept","content":{"confirm":true}}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}
		wg.Go(func() {
			out, err := m.Call(ctx, input("write_note", map[string]string{"name": fmt.Sprintf("n%d.txt", i), "text": "x"}), c)
			if err == nil && !strings.Contains(string(out), "Created note") {
				err = fmt.Errorf("output %s", out)
			}
			errs <- err
		})
	}
	for n := 0; n < calls; n++ {
		select {
		case <-asked:
		case err := <-errs:
			t.Fatalf("Call(write_note) %d of %d at once = %v", n+1, calls, err)
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", m.PID()))
	t.Logf("%d instances waiting: the worker holds %d descriptors", calls, len(fds))
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Call(write_note) = %v", err)
		}
	}
}

// A guest that cannot open a file because its worker ran out of descriptors crashes
// with wazero's EIO; the message names the cause and the numbers.
func TestOutOfOpenFilesNamed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/f.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// MaxConcurrent 1 with one grant: an open-file limit of 64 + 1 x (1 + 4) = 69.
	m := loadSpec(t, worker.Options{}, worker.Spec{Name: "fdhold", Wasm: wasm(t, "testdata/wasm/fdhold.wasm"),
		Grants: sandbox.Grants{Dirs: []sandbox.Dir{{Host: dir, Guest: "/data"}}}, Processes: 1, MaxConcurrent: 1})
	release := make(chan struct{})
	asked := make(chan string, 8)
	hold := &client{asked: asked, answer: func(ctx context.Context) ([]byte, error) {
		select {
		case <-release:
			return []byte(`{"action":"accept","content":{}}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	// Each call holds 16 files open: the fifth cannot open all of its own.
	for n := 1; n <= 5; n++ {
		errs := make(chan error, 1)
		wg.Go(func() {
			_, err := m.Call(ctx, input("hold", nil), hold)
			errs <- err
		})
		select {
		case <-asked:
			continue // it holds its files and waits
		case err := <-errs:
			var ge *sandbox.GuestError
			if !errors.As(err, &ge) || ge.Kind != sandbox.KindTrap || !strings.Contains(ge.Message, "too many open files") ||
				!strings.Contains(ge.Message, "of its 69 open files") {
				t.Fatalf("Call(hold) %d = %v; want a crash that names the open-file limit", n, err)
			}
			t.Logf("call %d: %s", n, ge.Message)
			return
		}
	}
	t.Fatal("five calls each held 16 files open within a limit of 69")
}

// While the supervisor is held, a plugin starts only its first worker; the others
// start once the hold is released. A plugin unloaded while held starts no more.
func TestHoldDefersOtherWorkers(t *testing.T) {
	ctx := context.Background()
	sup := supervisor(t, worker.Options{})
	release := sup.Hold()
	spec := worker.Spec{Name: "textkit", Wasm: wasm(t, "plugins/textkit/textkit.wasm"), Processes: 3}
	m, err := sup.Load(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	unloaded, err := sup.Load(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	// A call while held runs in the first worker.
	if _, err := m.Describe(ctx); err != nil {
		t.Fatalf("Describe while held: %v", err)
	}
	if m.Starts() != 1 || unloaded.Starts() != 1 {
		t.Fatalf("while held: Starts() = %d and %d, want 1 each", m.Starts(), unloaded.Starts())
	}
	unloaded.Close(ctx)
	release()
	release() // a second release changes nothing
	waitFor(t, "the other workers run", allRunning(m))
	if m.Starts() != 3 || unloaded.Starts() != 1 {
		t.Errorf("after release: Starts() = %d and %d, want 3 and 1 (unloaded)", m.Starts(), unloaded.Starts())
	}
	// Holding again does not stop workers already running.
	defer sup.Hold()()
	if pids := m.PIDs(); len(pids) != 3 {
		t.Errorf("PIDs() = %v, want 3 workers", pids)
	}
}
