package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// engine is shared by the tests so that the Go guests compile once per run.
var engine *sandbox.Engine

func TestMain(m *testing.M) {
	ctx := context.Background()
	var err error
	engine, err = sandbox.NewEngine(ctx, sandbox.Options{CacheDir: testenv.CacheDir()})
	if err != nil {
		panic(err)
	}
	code := m.Run()
	engine.Close(ctx)
	os.Exit(code)
}

func wasm(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(testenv.Path(path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func load(t testing.TB, path string, limits sandbox.Limits, grants sandbox.Grants) *sandbox.Module {
	t.Helper()
	ctx := context.Background()
	m, err := engine.Load(ctx, sandbox.Spec{Name: "test", Wasm: wasm(t, path), Limits: limits, Grants: grants})
	if err != nil {
		t.Fatalf("Load(%s) = %v", path, err)
	}
	t.Cleanup(func() { m.Close(ctx) })
	return m
}

func call(tool string, args any) []byte {
	b, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	return b
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		path string
		want string
	}{
		{"testdata/wasm/missing_import.wasm", "imports mcpwh.launch_missiles, which the host does not provide"},
		{"testdata/wasm/abi_v2.wasm", "built for guest ABI version 2, but this host implements version 1"},
		{"testdata/wasm/command.wasm", "exports _start"},
		{"testdata/wasm/truncated.wasm", "is not a valid WebAssembly module"},
		{"go.mod", "is not a valid WebAssembly module"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			_, err := engine.Load(context.Background(), sandbox.Spec{Name: "bad", Wasm: wasm(t, tt.path)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load(%s) = %v, want error containing %q", tt.path, err, tt.want)
			}
			if !strings.Contains(err.Error(), `plugin "bad"`) {
				t.Errorf("Load(%s) = %v, want the plugin named", tt.path, err)
			}
		})
	}
}

// With VersionKnown, Load runs none of the module: no instance, and a module built
// for another ABI version loads (its version is taken as known). Every other refusal
// stands: the module is still compiled and checked.
func TestLoadVersionKnown(t *testing.T) {
	ctx := context.Background()
	m, err := engine.Load(ctx, sandbox.Spec{Name: "v2", Wasm: wasm(t, "testdata/wasm/abi_v2.wasm"), VersionKnown: true})
	if err != nil {
		t.Fatalf("Load(abi_v2, VersionKnown) = %v", err)
	}
	defer m.Close(ctx)
	if m.Instances() != 0 {
		t.Errorf("Instances() = %d, want 0", m.Instances())
	}
	for _, path := range []string{"testdata/wasm/missing_import.wasm", "testdata/wasm/command.wasm", "testdata/wasm/truncated.wasm"} {
		if m, err := engine.Load(ctx, sandbox.Spec{Name: "bad", Wasm: wasm(t, path), VersionKnown: true}); err == nil {
			m.Close(ctx)
			t.Errorf("Load(%s, VersionKnown) = ok, want refused", path)
		}
	}
}

func TestDescribe(t *testing.T) {
	m := load(t, "plugins/toolbox/toolbox.wasm", sandbox.Limits{}, sandbox.Grants{})
	out, err := m.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Tools []struct{ Name string }
	}
	if err := json.Unmarshal(out, &manifest); err != nil {
		t.Fatalf("Describe() = %s: %v", out, err)
	}
	if len(manifest.Tools) == 0 {
		t.Fatalf("Describe() = %s, want tools", out)
	}
}

func TestTimeout(t *testing.T) {
	m := load(t, "testdata/wasm/loop.wasm", sandbox.Limits{Timeout: 200 * time.Millisecond}, sandbox.Grants{})
	start := time.Now()
	_, err := m.Call(context.Background(), call("spin", nil), nil)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindTimeout {
		t.Fatalf("Call(spin) = %v, want a timeout", err)
	}
	if !strings.Contains(err.Error(), "time limit of 200ms") {
		t.Errorf("Call(spin) = %q, want the limit in the message", err)
	}
	t.Logf("stopped %v after start", time.Since(start))
}

func TestCancel(t *testing.T) {
	m := load(t, "testdata/wasm/loop.wasm", sandbox.Limits{}, sandbox.Grants{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := m.Call(ctx, call("spin", nil), nil)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindCanceled {
		t.Fatalf("Call(spin) = %v, want cancelled", err)
	}
}

// TestCancelWhileAsleep: a guest asleep in WASI (a Go guest's time.Sleep is one
// poll_oneoff) is cancelled at once, not when its 10 s sleep would end.
func TestCancelWhileAsleep(t *testing.T) {
	m := load(t, "plugins/toolbox/toolbox.wasm", sandbox.Limits{}, sandbox.Grants{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := m.Call(ctx, call("slow_count", map[string]int{"to": 1, "delay_ms": 10000}), nil)
	took := time.Since(start)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindCanceled {
		t.Fatalf("Call(slow_count) = %v, want cancelled", err)
	}
	if took > 5*time.Second || m.Live() != 0 {
		t.Errorf("cancel took %v with %d instances live; want it to end the sleep", took, m.Live())
	}
	t.Logf("cancelled %v after start", took)
}

// TestSleeperPastItsDeadline: a guest whose sleep runs past the time limit (the host
// ends it at the deadline) and that then returns OK still fails with the time limit,
// every time, and its error answers errors.Is(err, context.DeadlineExceeded); woken by
// a cancellation instead, it is cancelled.
func TestSleeperPastItsDeadline(t *testing.T) {
	m := load(t, "testdata/wasm/sleeper.wasm", sandbox.Limits{Timeout: 100 * time.Millisecond}, sandbox.Grants{})
	for i := range 6 {
		out, err := m.Call(context.Background(), call("nap", nil), nil)
		var ge *sandbox.GuestError
		if !errors.As(err, &ge) || ge.Kind != sandbox.KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Call(nap) #%d = %s, %v; want a time-limit error", i, out, err)
		}
		if !strings.Contains(err.Error(), "time limit of 100ms") {
			t.Errorf("Call(nap) = %q, want the limit in the message", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	out, err := m.Call(ctx, call("nap", nil), nil)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindCanceled || !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call(nap) cancelled = %s, %v; want cancelled", out, err)
	}
}

func TestOutOfMemory(t *testing.T) {
	m := load(t, "testdata/wasm/memhog.wasm", sandbox.Limits{MemoryMiB: 32}, sandbox.Grants{})
	_, err := m.Call(context.Background(), call("hog", map[string]int{"mib": 64}), nil)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindOutOfMemory {
		t.Fatalf("Call(hog 64 MiB) = %v, want out of memory", err)
	}
	if !strings.Contains(err.Error(), "ran out of memory (limit 32 MiB)") {
		t.Errorf("Call(hog) = %q", err)
	}
	// Within the limit it works: the failed instance left nothing behind.
	out, err := m.Call(context.Background(), call("hog", map[string]int{"mib": 4}), nil)
	if err != nil || !strings.Contains(string(out), "allocated 4 MiB") {
		t.Fatalf("Call(hog 4 MiB) = %s, %v", out, err)
	}
}

func TestOutputTooLarge(t *testing.T) {
	m := load(t, "testdata/wasm/flood.wasm", sandbox.Limits{}, sandbox.Grants{})
	_, err := m.Call(context.Background(), call("big", nil), nil)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindOutput {
		t.Fatalf("Call(big) = %v, want an output error", err)
	}
	if want := "output of 2 MiB exceeds the limit of 1 MiB"; !strings.Contains(err.Error(), want) {
		t.Errorf("Call(big) = %q, want %q", err, want)
	}
}

func TestInputTooLarge(t *testing.T) {
	m := load(t, "testdata/wasm/flood.wasm", sandbox.Limits{MaxInputBytes: 100}, sandbox.Grants{})
	_, err := m.Call(context.Background(), call("big", map[string]string{"x": strings.Repeat("x", 200)}), nil)
	if err == nil || !strings.Contains(err.Error(), "exceeds plugin \"test\"'s limit of 100") {
		t.Fatalf("Call(big input) = %v", err)
	}
	if got := m.Instances(); got != 1 { // the version check at load only
		t.Errorf("Instances() = %d, want 1: the guest must not run", got)
	}
}

// recorder is a Host that records what the guest sent.
type recorder struct {
	mu       sync.Mutex
	logs     []string
	progress []float64
	reply    func(method string, params []byte) ([]byte, error)
}

func (r *recorder) Log(_ context.Context, level sandbox.Level, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, level.String()+": "+msg)
}

func (r *recorder) Progress(_ context.Context, p, total float64, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, p)
}

func (r *recorder) Request(ctx context.Context, method string, params []byte) ([]byte, error) {
	if r.reply == nil {
		return nil, sandbox.ErrUnavailable
	}
	return r.reply(method, params)
}

func TestBadPointers(t *testing.T) {
	m := load(t, "testdata/wasm/badptr.wasm", sandbox.Limits{}, sandbox.Grants{})
	rec := &recorder{reply: func(string, []byte) ([]byte, error) { return []byte(`{}`), nil }}
	out, err := m.Call(context.Background(), call("probe", nil), rec)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	want := "-1 -1 -1 -3 0 -3 -2 -3 -1 -3 -8 -2 -1 "
	if got := res.Content[0].Text; got != want {
		t.Errorf("statuses = %q, want %q", got, want)
	}
	if len(rec.logs) != 1 || rec.logs[0] != "info: \uFFFD" {
		t.Errorf("logs = %q, want one line with invalid UTF-8 replaced", rec.logs)
	}
}

func TestFreshInstancePerCall(t *testing.T) {
	m := load(t, "testdata/wasm/stateful.wasm", sandbox.Limits{}, sandbox.Grants{})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			out, err := m.Call(context.Background(), call("remember", map[string]string{"value": string(rune('a' + i))}), nil)
			if err != nil {
				errs <- err
				return
			}
			if !strings.Contains(string(out), `calls=1 previous=\"\"`) {
				errs <- errors.New("state leaked between calls: " + string(out))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDirGrants(t *testing.T) {
	docs := t.TempDir()
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(docs, "hello.txt"), []byte("hello from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	grants := sandbox.Grants{Dirs: []sandbox.Dir{{Host: docs, Guest: "/docs"}, {Host: notes, Guest: "/notes", Writable: true}}}
	m := load(t, "plugins/toolbox/toolbox.wasm", sandbox.Limits{}, grants)
	ctx := context.Background()

	out, err := m.Call(ctx, call("read_file", map[string]string{"path": "hello.txt"}), nil)
	if err != nil || !strings.Contains(string(out), "hello from the host") {
		t.Fatalf("read_file = %s, %v", out, err)
	}
	// write_note asks for confirmation; without a client that can answer, nothing is written.
	out, err = m.Call(ctx, call("write_note", map[string]string{"name": "n.txt", "text": "x"}), nil)
	if err != nil || !strings.Contains(string(out), "nothing written") {
		t.Fatalf("write_note without elicitation = %s, %v", out, err)
	}
	rec := &recorder{reply: func(method string, params []byte) ([]byte, error) {
		if method != "elicit" || !strings.Contains(string(params), "Create note") {
			t.Errorf("Request(%q, %s)", method, params)
		}
		return []byte(`{"action":"accept","content":{"confirm":true}}`), nil
	}}
	out, err = m.Call(ctx, call("write_note", map[string]string{"name": "n.txt", "text": "note text"}), rec)
	if err != nil || !strings.Contains(string(out), "Created note n.txt") {
		t.Fatalf("write_note = %s, %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(notes, "n.txt")); err != nil || string(b) != "note text" {
		t.Errorf("note on disk = %q, %v", b, err)
	}
	// No grant, no files.
	bare := load(t, "plugins/toolbox/toolbox.wasm", sandbox.Limits{}, sandbox.Grants{})
	out, err = bare.Call(ctx, call("read_file", map[string]string{"path": "hello.txt"}), nil)
	if err != nil || !strings.Contains(string(out), `"isError":true`) {
		t.Fatalf("read_file without grant = %s, %v", out, err)
	}
}

func TestStackOverflow(t *testing.T) {
	m := load(t, "testdata/wasm/stack.wasm", sandbox.Limits{}, sandbox.Grants{})
	_, err := m.Call(context.Background(), call("deep", nil), nil)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindTrap || !strings.Contains(err.Error(), "stack overflow") {
		t.Fatalf("Call(deep) = %v, want a trap naming the stack overflow", err)
	}
	if n := m.Live(); n != 0 {
		t.Errorf("%d instances alive after the trap", n)
	}
}

// TestHostCallFlood: a guest that calls the host a million times gets LIMIT once over
// the per-call limits; the host sees only what the limits allow, and the call ends.
func TestHostCallFlood(t *testing.T) {
	m := load(t, "testdata/wasm/hostflood.wasm", sandbox.Limits{}, sandbox.Grants{})
	rec := &recorder{}
	out, err := m.Call(context.Background(), call("flood", nil), rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"text":"-7"`) {
		t.Errorf("last log status = %s, want LIMIT (-7)", out)
	}
	if len(rec.logs) != 1000 || len(rec.progress) != 10000 {
		t.Errorf("host saw %d logs and %d progress reports, want 1000 and 10000", len(rec.logs), len(rec.progress))
	}
}
