package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// The test binary is also the worker binary: started with worker.Arg, it is a worker.
func TestMain(m *testing.M) {
	if worker.IsWorker(os.Args) {
		os.Exit(worker.Main())
	}
	os.Exit(m.Run())
}

func supervisor(t testing.TB, opts worker.Options) *worker.Supervisor {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = testenv.CacheDir()
	}
	s, err := worker.NewSupervisor(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// load starts the plugin in one worker process.
func load(t testing.TB, rel string, limits sandbox.Limits) *worker.Module {
	t.Helper()
	return loadWith(t, worker.Options{}, rel, limits)
}

func loadWith(t testing.TB, opts worker.Options, rel string, limits sandbox.Limits) *worker.Module {
	t.Helper()
	return loadSpec(t, opts, worker.Spec{Name: "test", Wasm: wasm(t, rel), Limits: limits, Processes: 1})
}

func loadSpec(t testing.TB, opts worker.Options, spec worker.Spec) *worker.Module {
	t.Helper()
	m, err := supervisor(t, opts).Load(context.Background(), spec)
	if err != nil {
		t.Fatalf("Load(%s) = %v", spec.Name, err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func wasm(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(testenv.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func input(tool string, args any) []byte {
	b, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	return b
}

// The same module gives the same manifest and the same results in a worker as in process.
func TestSameAsInProcess(t *testing.T) {
	ctx := context.Background()
	w := load(t, "plugins/textkit/textkit.wasm", sandbox.Limits{})
	e := testenv.Engine(t)
	local, err := e.Load(ctx, sandbox.Spec{Name: "test", Wasm: wasm(t, "plugins/textkit/textkit.wasm")})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close(ctx)
	wantDoc, _ := local.Describe(ctx)
	if doc, err := w.Describe(ctx); err != nil || string(doc) != string(wantDoc) {
		t.Fatalf("Describe() = %.80s, %v; want %.80s", doc, err, wantDoc)
	}
	for _, in := range [][]byte{
		input("sha256", map[string]string{"text": "hello"}),
		input("stats", map[string]string{"text": "one two\nthree"}),
		input("base64_decode", map[string]string{"text": "%%%"}),
	} {
		want, wantErr := local.Call(ctx, in, nil)
		got, err := w.Call(ctx, in, nil)
		if string(got) != string(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("Call(%s) = %s, %v; in process %s, %v", in, got, err, want, wantErr)
		}
	}
	if n := w.Live(); n != 0 {
		t.Errorf("Live() = %d after the calls, want 0", n)
	}
}

// recorder is a sandbox.Host that records what crosses the boundary.
type recorder struct {
	mu       sync.Mutex
	logs     []string
	progress []float64
	asked    chan string // receives each request's method; nil answers at once
	answer   func(method string) ([]byte, error)
}

func (r *recorder) Log(_ context.Context, level sandbox.Level, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, level.String()+": "+msg)
}

func (r *recorder) Progress(_ context.Context, p, _ float64, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, p)
}

func (r *recorder) Request(ctx context.Context, method string, _ []byte) ([]byte, error) {
	if r.asked != nil {
		r.asked <- method
	}
	if r.answer != nil {
		return r.answer(method)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestHostFunctionsCrossTheBoundary(t *testing.T) {
	ctx := context.Background()
	m := load(t, "testdata/wasm/asker.wasm", sandbox.Limits{})
	tests := []struct {
		name   string
		answer func(string) ([]byte, error)
		want   string
	}{
		{"accepted", func(string) ([]byte, error) { return []byte(`{"action":"accept","content":{"confirm":true}}`), nil }, `"text":"accept"`},
		{"unavailable", func(string) ([]byte, error) { return nil, sandbox.ErrUnavailable }, "UNAVAILABLE"},
		{"failed", func(string) ([]byte, error) { return nil, errors.New("the client went away") }, "could not ask: the client went away"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := m.Call(ctx, input("ask", nil), &recorder{answer: tt.answer})
			if err != nil || !strings.Contains(string(out), tt.want) {
				t.Errorf("Call(ask) = %s, %v; want it to contain %s", out, err, tt.want)
			}
		})
	}
	// Logs and progress: the flood guest logs and reports until it hits the ABI's limits.
	f := load(t, "testdata/wasm/hostflood.wasm", sandbox.Limits{})
	doc, _ := f.Describe(ctx)
	var manifest struct{ Tools []struct{ Name string } }
	_ = json.Unmarshal(doc, &manifest)
	for _, tool := range manifest.Tools {
		r := &recorder{}
		if _, err := f.Call(ctx, input(tool.Name, nil), r); err != nil {
			t.Errorf("Call(%s) = %v", tool.Name, err)
		}
		if len(r.logs)+len(r.progress) == 0 {
			t.Errorf("Call(%s): no log or progress reached the host", tool.Name)
		}
		t.Logf("%s: %d logs, %d progress reports crossed", tool.Name, len(r.logs), len(r.progress))
	}
}

// A looping guest is stopped by its context inside the worker, which survives. (The
// grace is long so that a slow machine, or the race detector, never makes the worker
// miss it: this test is about the cooperative path.)
func TestLoopStoppedInsideWorker(t *testing.T) {
	m := loadWith(t, worker.Options{KillGrace: 10 * time.Second}, "testdata/wasm/loop.wasm", sandbox.Limits{Timeout: 200 * time.Millisecond})
	_, err := m.Call(context.Background(), input("spin", nil), nil)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindTimeout || strings.Contains(ge.Message, "killed") {
		t.Fatalf("Call(spin) = %v; want a time-limit error from the worker itself", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = m.Call(ctx, input("spin", nil), nil)
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindCanceled {
		t.Fatalf("Call(spin) cancelled = %v; want cancelled", err)
	}
	if m.Starts() != 1 || m.Live() != 0 {
		t.Errorf("Starts() = %d, Live() = %d; want 1 worker, no instance left", m.Starts(), m.Live())
	}
}

// A guest that sleeps past its time limit and then returns OK fails with the time
// limit in a worker as in process, every time, and the error answers
// errors.Is(err, context.DeadlineExceeded) as the in-process one does.
func TestSleeperPastItsDeadline(t *testing.T) {
	m := loadWith(t, worker.Options{KillGrace: 10 * time.Second}, "testdata/wasm/sleeper.wasm", sandbox.Limits{Timeout: 100 * time.Millisecond})
	for i := range 4 {
		out, err := m.Call(context.Background(), input("nap", nil), nil)
		var ge *sandbox.GuestError
		if !errors.As(err, &ge) || ge.Kind != sandbox.KindTimeout || !errors.Is(err, context.DeadlineExceeded) || strings.Contains(ge.Message, "killed") {
			t.Fatalf("Call(nap) #%d = %s, %v; want a time-limit error from the worker itself", i, out, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	out, err := m.Call(ctx, input("nap", nil), nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call(nap) cancelled = %s, %v; want cancelled", out, err)
	}
	if m.Starts() != 1 {
		t.Errorf("Starts() = %d, want 1: the worker stops the call itself", m.Starts())
	}
}

// A guest that wazero cannot interrupt is stopped by killing its worker; calls that
// shared the worker fail with a message that says so, and the next call gets a new one.
func TestUninterruptibleGuestKillsItsWorker(t *testing.T) {
	for _, how := range []string{"deadline", "cancel"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			limits := sandbox.Limits{Timeout: 300 * time.Millisecond}
			if how == "cancel" {
				limits.Timeout = time.Minute
			}
			m := load(t, "testdata/wasm/calltree.wasm", limits)
			pid := m.PID()
			callCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			if how == "cancel" {
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			_, err := m.Call(callCtx, input("tree", nil), nil)
			var ge *sandbox.GuestError
			want := map[string]sandbox.ErrorKind{"deadline": sandbox.KindTimeout, "cancel": sandbox.KindCanceled}[how]
			if !errors.As(err, &ge) || ge.Kind != want || !strings.Contains(ge.Message, "worker process was killed") {
				t.Fatalf("Call(tree) = %v; want kind %d and the kill explained", err, want)
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				t.Errorf("worker %d still exists after the call returned", pid)
			}
			if m.Live() != 0 {
				t.Errorf("Live() = %d, want 0", m.Live())
			}
			// The next call starts a new worker and is served normally.
			if _, err := m.Describe(ctx); err != nil || m.Starts() != 2 {
				t.Errorf("Describe() after the kill = %v with %d starts; want a second worker", err, m.Starts())
			}
		})
	}
}

func TestBystanderLearnsWhy(t *testing.T) {
	ctx := context.Background()
	// One plugin, two calls in the same worker: one waits for user input, the other
	// never stops. Killing the worker ends both; the waiting one says why.
	m := load(t, "testdata/wasm/calltree.wasm", sandbox.Limits{Timeout: 300 * time.Millisecond})
	errs := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, input("tree", nil), nil)
		errs <- err
	}()
	_, err := m.Call(ctx, input("tree", nil), nil)
	other := <-errs
	var a, b *sandbox.GuestError
	if !errors.As(err, &a) || !errors.As(other, &b) {
		t.Fatalf("calls = %v / %v; want guest errors", err, other)
	}
	kinds := map[sandbox.ErrorKind]bool{a.Kind: true, b.Kind: true}
	if !kinds[sandbox.KindTimeout] {
		t.Errorf("kinds %v, %v: want one time-limit error", a, b)
	}
	for _, e := range []*sandbox.GuestError{a, b} {
		if e.Kind == sandbox.KindAborted && !strings.Contains(e.Message, "did not stop") {
			t.Errorf("bystander's message %q does not say why its worker stopped", e.Message)
		}
	}
}

func TestLoadRefusals(t *testing.T) {
	tests := []struct {
		rel  string
		want string
	}{
		{"testdata/wasm/missing_import.wasm", "imports"},
		{"testdata/wasm/truncated.wasm", "not a valid WebAssembly module"},
		{"testdata/wasm/abi_v2.wasm", "version 2"},
		{"testdata/wasm/command.wasm", "_start"},
	}
	s := supervisor(t, worker.Options{})
	for _, tt := range tests {
		_, err := s.Load(context.Background(), worker.Spec{Name: "bad", Wasm: wasm(t, tt.rel)})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load(%s) = %v; want an error containing %q", tt.rel, err, tt.want)
		}
	}
}

// A worker that does not speak the protocol is refused, never trusted.
func TestMisbehavingWorker(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"garbage", "printf 'this is not a frame at all, just text'; sleep 5", "malformed"},
		{"huge frame", `printf '\377\377\377\377\002\000\000\000\000\000\000\000\000'; sleep 5`, "out of range"},
		{"exits", "exit 3", "exit status 3"},
		{"wrong first frame", `printf '\000\000\000\012\011\000\000\000\000\000\000\000\001\000'; sleep 5`, "before ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "worker.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null &\n"+tt.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			s := supervisor(t, worker.Options{Command: script})
			_, err := s.Load(context.Background(), worker.Spec{Name: "w", Wasm: wasm(t, "testdata/wasm/loop.wasm")})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load() = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

// A worker runs with an empty environment, only its three standard descriptors among
// files (none the server inherited), resource limits and a seccomp filter.
func TestWorkerIsHardened(t *testing.T) {
	t.Setenv("MCPWH_SECRET_FOR_TEST", "must not leak")
	// A descriptor without close-on-exec, as a server inherits one from its parent.
	marker := filepath.Join(t.TempDir(), "inherited-marker")
	fd, err := syscall.Open(marker, syscall.O_CREAT|syscall.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	m := load(t, "testdata/wasm/loop.wasm", sandbox.Limits{})
	pid := m.PID()
	proc := func(name string) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if env := proc("environ"); env != "" {
		t.Errorf("worker environment = %q, want empty", env)
	}
	status := proc("status")
	for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(status, want) {
			t.Errorf("/proc/%d/status lacks %q", pid, want)
		}
	}
	limits := proc("limits")
	for _, want := range []string{"Max open files            256", "Max core file size        0"} {
		if !strings.Contains(limits, want) {
			t.Errorf("/proc/%d/limits lacks %q:\n%s", pid, want, limits)
		}
	}
	if cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); cwd != "/" {
		t.Errorf("worker cwd = %q, want /", cwd)
	}
	// Every thread yields the processor to the server: nice is per thread on Linux.
	threads, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, th := range threads {
		stat := proc("task/" + th.Name() + "/stat")
		f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:]) // f[0] is field 3, state
		if nice := f[16]; nice != strconv.Itoa(worker.WorkerNice) {
			t.Errorf("worker thread %s runs at nice %s, want %d", th.Name(), nice, worker.WorkerNice)
		}
	}
	if len(threads) == 0 {
		t.Error("the worker has no threads in /proc")
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		n, _ := strconv.Atoi(fd.Name())
		if n <= 2 {
			continue // the channel and stderr
		}
		// Above them only the Go runtime's own: its poller and the cgroup files it rereads.
		if !strings.HasPrefix(target, "anon_inode:") && !strings.HasPrefix(target, "/sys/fs/cgroup/") {
			t.Errorf("worker holds fd %s -> %s; want only stdin, stdout, stderr and the Go runtime's own", fd.Name(), target)
		}
	}
}

// TestInputWaitIsNotRunTime: in a worker as in process, the wait for an answer does not
// count against the time limit, in the worker's clock nor in the supervisor's watchdog:
// a guest answered after three times its limit gets the answer, one that loops after
// the answer is stopped by the worker itself (not killed), and one that wazero cannot
// interrupt after the answer (askspin) is killed at its limit, not before the answer.
func TestInputWaitIsNotRunTime(t *testing.T) {
	const limit, wait = 300 * time.Millisecond, 900 * time.Millisecond
	answer := func(string) ([]byte, error) {
		time.Sleep(wait)
		return []byte(`{"action":"accept","content":{"confirm":true}}`), nil
	}
	tests := []struct {
		wasm, want string
		kind       sandbox.ErrorKind // 0: the call succeeds with want in its output
		killed     bool
	}{
		{"testdata/wasm/asker.wasm", `"text":"accept"`, 0, false},
		{"testdata/wasm/askloop.wasm", "exceeded its time limit of 300ms", sandbox.KindTimeout, false},
		{"testdata/wasm/askspin.wasm", "exceeded its time limit of 300ms", sandbox.KindTimeout, true},
	}
	for _, tt := range tests {
		t.Run(tt.wasm, func(t *testing.T) {
			opts := worker.Options{}
			if !tt.killed {
				opts.KillGrace = 10 * time.Second // the worker's own clock must stop it
			}
			m := loadWith(t, opts, tt.wasm, sandbox.Limits{Timeout: limit})
			start := time.Now()
			out, err := m.Call(t.Context(), input("ask", nil), &recorder{answer: answer})
			took := time.Since(start)
			if tt.kind == 0 {
				if err != nil || !strings.Contains(string(out), tt.want) {
					t.Fatalf("Call(ask) after a %v wait with a %v limit = %s, %v; want the answer", wait, limit, out, err)
				}
				return
			}
			var ge *sandbox.GuestError
			if !errors.As(err, &ge) || ge.Kind != tt.kind || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(ge.Message, tt.want) {
				t.Fatalf("Call(ask) = %v; want kind %d with %q", err, tt.kind, tt.want)
			}
			if killed := strings.Contains(ge.Message, "killed"); killed != tt.killed {
				t.Errorf("Call(ask) = %q; killed %v, want %v", ge.Message, killed, tt.killed)
			}
			if took < wait+limit {
				t.Errorf("stopped after %v, before the wait (%v) and the limit (%v) had passed", took, wait, limit)
			}
		})
	}
}

// TestCancelWhileWaitingSparesTheWorker: a call cancelled while its guest waits for
// an answer gets WaitingCancelGrace beyond KillGrace to unwind, so its worker is not
// killed and another call parked in the same worker lives on. KillGrace is 1 ns here:
// a guest that was running would cost its worker at once.
func TestCancelWhileWaitingSparesTheWorker(t *testing.T) {
	m := loadWith(t, worker.Options{KillGrace: time.Nanosecond}, "testdata/wasm/asker.wasm", sandbox.Limits{Timeout: time.Minute})
	pid := m.PID()
	bystander := &recorder{asked: make(chan string, 1)}
	bystanderDone := make(chan error, 1)
	go func() {
		_, err := m.Call(t.Context(), input("ask", nil), bystander)
		bystanderDone <- err
	}()
	<-bystander.asked
	ctx, cancel := context.WithCancel(t.Context())
	parked := &recorder{asked: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, input("ask", nil), parked)
		done <- err
	}()
	<-parked.asked
	cancel()
	err := <-done
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindCanceled || strings.Contains(ge.Message, "killed") {
		t.Fatalf("Call(ask) cancelled while waiting = %v; want cancelled, the worker not killed", err)
	}
	if got := m.PID(); got != pid {
		t.Fatalf("worker PID after the cancel = %d, want %d (not restarted)", got, pid)
	}
	select {
	case err := <-bystanderDone:
		t.Fatalf("the parked bystander ended with the cancelled call: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
}

// A call's resource report crosses the boundary: the supervisor's reader decodes the
// worker's report frame into the caller's sandbox.Report, concurrent calls each their own.
func TestReportCrossesTheBoundary(t *testing.T) {
	m := load(t, "plugins/textkit/textkit.wasm", sandbox.Limits{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				var rep sandbox.Report
				if _, err := m.Call(sandbox.WithReport(context.Background(), &rep), input("ping", map[string]any{}), nil); err != nil {
					t.Error(err)
					return
				}
				if rep.Instantiate <= 0 || rep.Run <= 0 || rep.MemoryBytes == 0 {
					t.Errorf("report of a ping through a worker = %+v, want instantiate and run times and the memory", rep)
					return
				}
			}
		})
	}
	wg.Wait()
}

// With VersionKnown a worker compiles and checks the module but runs none of it: a
// module built for another ABI version starts (its version is taken as known), and
// without it is refused with the reason.
func TestVersionKnownRunsNothing(t *testing.T) {
	ctx := context.Background()
	spec := worker.Spec{Name: "v2", Wasm: wasm(t, "testdata/wasm/abi_v2.wasm"), Processes: 1}
	if m, err := supervisor(t, worker.Options{}).Load(ctx, spec); err == nil {
		m.Close(ctx)
		t.Fatal("Load(abi_v2) = ok, want the version refused")
	} else if !strings.Contains(err.Error(), "guest ABI version 2") {
		t.Errorf("Load(abi_v2) = %v, want the version named", err)
	}
	spec.VersionKnown = true
	m := loadSpec(t, worker.Options{}, spec)
	if m.Instances() != 0 {
		t.Errorf("Instances() = %d, want 0", m.Instances())
	}
	// A broken module is refused all the same.
	spec.Wasm = wasm(t, "testdata/wasm/truncated.wasm")
	if m, err := supervisor(t, worker.Options{}).Load(ctx, spec); err == nil {
		m.Close(ctx)
		t.Fatal("Load(truncated, VersionKnown) = ok, want refused")
	} else if !strings.Contains(err.Error(), "is not a valid WebAssembly module") {
		t.Errorf("Load(truncated, VersionKnown) = %v, want it named invalid", err)
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

// LiveMemory shows the linear memory a worker's parked call holds (the worker says
// it in a memory frame, within a second or so), and none once the call ended.
func TestLiveMemory(t *testing.T) {
	m := load(t, "testdata/wasm/memgrow.wasm", sandbox.Limits{MemoryMiB: 4})
	h := &parkedHost{asked: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), input("grow", nil), h)
		done <- err
	}()
	<-h.asked
	waitFor := func(what string, want int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); m.LiveMemory() != want; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("LiveMemory() = %d %s, want %d", m.LiveMemory(), what, want)
			}
		}
	}
	waitFor("with the call parked", 49*65536)
	close(h.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor("after the call", 0)
}
