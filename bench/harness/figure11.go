package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// Figure11 is issue #21's side-by-side: sync tools/call throughput at c=16 over stdio
// and HTTP with the server's CPU per call, beside the native peers and the floor a
// sandboxed call cannot go below (bare wazero's CPU per call, in this process); and
// the in-process cost of a fresh C-guest instance through the sandbox itself.
func (e *Env) Figure11(ctx context.Context) (*Figure, error) {
	d := pick(e, 3*time.Second, 300*time.Millisecond)
	f := &Figure{N: 11, Title: "Sync tools/call throughput at c=16 and the cost of a C-guest call in process, vs the native peers",
		What: fmt.Sprintf("16 workers call the trivial tool synchronously, back to back, for %s (over stdio on one shared connection, over HTTP "+
			"one session each); calls per second and the server's CPU time per call, its worker processes included. "+
			"Bare wazero: this process instantiating textkit and calling mcpwh_call on one goroutine (harness.Bare), CPU per call. "+
			"Sandbox: sandbox.Module.Call of textkit_ping in this process (every call in its starting state: a kept instance restored exactly, or a fresh one; every limit, the real host functions), median per call.", d),
		Baseline:  "mcp-go v1.2.1 and the TypeScript SDK 1.32.2 serving the same tool natively, same client, same run.",
		Reproduce: "go run ./bench/cmd/benchall -figures 11"}
	servers := make([]Server, 0, 4)
	for _, v := range Variants {
		if v.Figures == nil {
			s, err := e.Ours(v, "", textkit)
			if err != nil {
				return nil, err
			}
			servers = append(servers, s)
		}
	}
	servers = append(servers, e.Peers()...)
	bare, err := NewBare(ctx, e.cache, filepath.Join(e.Root, "plugins/textkit/textkit.wasm"), "ping", "{}")
	if err != nil {
		return nil, err
	}
	defer bare.Close(ctx)
	box, err := newSandboxCall(ctx, filepath.Join(e.Root, "plugins/textkit/textkit.wasm"))
	if err != nil {
		return nil, err
	}
	defer box.close(ctx)
	for rep := range e.Reps {
		e.logf("figure 11, repetition %d", rep+1)
		for k := range servers {
			s := servers[(k+rep)%len(servers)] // interleaved: each server goes first in turn
			for _, tr := range []string{Stdio, HTTP} {
				p, cs, err := e.open(ctx, s, tr, 16, Caps{})
				if err != nil {
					return nil, err
				}
				call := func(ctx context.Context, w int) error { return callTool(ctx, cs[w%len(cs)], s.Tool, map[string]any{}) }
				if _, err = loadFor(ctx, 16, d/4, call); err == nil { // warm-up
					var l load
					var cpu float64
					if l, cpu, err = measure(p, func() (load, error) { return loadFor(ctx, 16, d, call) }); err == nil {
						f.add(fmt.Sprintf("%s, %s, c=16", s.Name, tr), "calls/s", l.Rate)
						f.add(fmt.Sprintf("%s, %s, c=16, server CPU per call", s.Name, tr), "us CPU", cpu)
					}
				}
				e.closeAll(p, cs)
				if err != nil {
					return nil, fmt.Errorf("%s over %s: %w\n%s", s.Name, tr, err, p.Stderr())
				}
			}
		}
		cpu, err := selfCPUPerOp(d, func() error { return bare.Call(ctx) })
		if err != nil {
			return nil, err
		}
		f.add("bare wazero, C guest, CPU per call", "us CPU", cpu)
		lat, err := roundTrips(ctx, pickN(e, 20000, 500), box.call)
		if err != nil {
			return nil, err
		}
		f.add("sandbox, in process, C guest: instance in its starting state + call, p50", "us", percentile(lat, 0.5))
	}
	peers := e.Peers()
	mcpgo, ts := peers[0].Name, peers[1].Name
	for _, main := range modes() {
		for _, tr := range []string{Stdio, HTTP} {
			for _, peer := range peers {
				f.ratio(fmt.Sprintf("%s / %s, %s, c=16", main, peer.Name, tr), fmt.Sprintf("%s, %s, c=16", main, tr), fmt.Sprintf("%s, %s, c=16", peer.Name, tr))
			}
		}
		if r := f.find(fmt.Sprintf("%s / %s, %s, c=16", main, ts, Stdio)); r != nil {
			m := r.Median()
			f.Targets = append(f.Targets, Target{Variant: main, Goal: "sync tools/call, stdio c=16, C guest: >= 2x the TS SDK's rate",
				Got: format(m) + "x", Met: m >= 2, Why: "the server spends its CPU per call mostly in the go-sdk (half of it in a --cpu-profile of this load), decoding every message and its params with a new decoder and a 32 KiB buffer each (docs/upstream/go-sdk-json-decoder.md); the TS SDK's JSON is native"})
		}
		ours, peer, floor := f.find(fmt.Sprintf("%s, %s, c=16, server CPU per call", main, Stdio)),
			f.find(fmt.Sprintf("%s, %s, c=16, server CPU per call", mcpgo, Stdio)), f.find("bare wazero, C guest, CPU per call")
		if ours != nil && peer != nil && floor != nil {
			limit := peer.Median() + floor.Median()
			f.Targets = append(f.Targets, Target{Variant: main, Goal: "sync tools/call, stdio c=16: server CPU per call <= mcp-go's + the bare-wazero floor",
				Got: fmt.Sprintf("%s us (limit %s = %s + %s)", format(ours.Median()), format(limit), format(peer.Median()), format(floor.Median())),
				Met: ours.Median() <= limit,
				Why: "what is left above the floor is the protocol (go-sdk decoding and encoding each message), the argument and result checks, and in worker mode the frames to and from the worker process"})
		}
	}
	if r := f.find("sandbox, in process, C guest: instance in its starting state + call, p50"); r != nil {
		m := r.Median()
		f.Targets = append(f.Targets, Target{Variant: "sandbox, in process", Goal: "C-guest instance: instantiate + call < 10 us in process",
			Got: format(m) + " us", Met: m < 10,
			Why: "the instance is kept and restored (sandbox/kept.go); what remains is wazero's per-call context watcher (WithCloseOnContextDone), copying the 64 KiB image back and the call's clock; see BenchmarkCall in sandbox"})
	}
	return f, nil
}

// pickN is full in a real run and small in a smoke run.
func pickN(e *Env, full, smoke int) int {
	if e.Smoke {
		return smoke
	}
	return full
}

// selfCPUPerOp runs op back to back on one goroutine for d and returns this process's
// CPU time (user + system) per op in microseconds.
func selfCPUPerOp(d time.Duration, op func() error) (float64, error) {
	before, err := selfCPU()
	if err != nil {
		return 0, err
	}
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		if err := op(); err != nil {
			return 0, err
		}
	}
	after, err := selfCPU()
	if err != nil || n == 0 {
		return 0, err
	}
	return float64((after - before).Microseconds()) / float64(n), nil
}

func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// sandboxCall is a plugin loaded by the sandbox in this process, for calls of one tool.
type sandboxCall struct {
	engine *sandbox.Engine
	mod    *sandbox.Module
	input  []byte
}

func newSandboxCall(ctx context.Context, path string) (*sandboxCall, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	engine, err := sandbox.NewEngine(ctx, sandbox.Options{})
	if err != nil {
		return nil, err
	}
	mod, err := engine.Load(ctx, sandbox.Spec{Name: "textkit", Wasm: wasm, Limits: sandbox.Limits{MemoryMiB: 16}})
	if err != nil {
		engine.Close(ctx)
		return nil, err
	}
	return &sandboxCall{engine: engine, mod: mod, input: []byte(`{"tool":"ping","arguments":{}}`)}, nil
}

func (s *sandboxCall) call(ctx context.Context) error {
	out, err := s.mod.Call(ctx, s.input, nil)
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("textkit ping: empty output")
	}
	return err
}

func (s *sandboxCall) close(ctx context.Context) {
	s.mod.Close(ctx)
	s.engine.Close(ctx)
}

// atLeastPeer is issue #21's target "at least mcp-go's rate" for what (figure 2's
// create -> completed, figure 3's tasks/get) in mode main, at where (a row label's
// "transport[, c=N]" part), read from the figure's ratio rows.
func atLeastPeer(f *Figure, main, what, where string) []Target {
	r := f.find(fmt.Sprintf("%s / %s, %s", main, "mcp-go v1.2.1 (native)", where))
	if r == nil {
		return nil
	}
	m := r.Median()
	return []Target{{Variant: main, Goal: fmt.Sprintf("%s at least mcp-go's rate, %s", what, where),
		Got: format(m) + "x", Met: m >= 1,
		Why: "compare the server CPU per operation rows: the go-sdk's per-message decoding (docs/upstream/go-sdk-json-decoder.md) and its Streamable HTTP handler are the difference"}}
}
