package plugins_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
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

// waiter is a sandbox.Host whose calls wait for their answer until release is closed,
// and that records the queue messages it is shown.
type waiter struct {
	asked   chan<- struct{}
	release <-chan struct{}

	mu      sync.Mutex
	waiting []string
}

func (w *waiter) Log(context.Context, sandbox.Level, string)         {}
func (w *waiter) Progress(context.Context, float64, float64, string) {}
func (w *waiter) Request(ctx context.Context, _ string, _ []byte) ([]byte, error) {
	w.asked <- struct{}{}
	select {
	case <-w.release:
		return []byte(`{"action":"accept","content":{}}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (w *waiter) Waiting(_ context.Context, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiting = append(w.waiting, msg)
}

func (w *waiter) shown() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.waiting...)
}

// A plugin runs at most max_concurrent calls; max_queued more wait for a slot, in
// order, and are told so; past that a call is refused at once, and a queued call
// that waits queue_timeout is refused too. In process and in worker processes alike.
func TestAdmission(t *testing.T) {
	for _, mode := range []string{"trusted", "worker"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			spec := testenv.Spec(t, "hang", "testdata/wasm/hangunanswered.wasm")
			spec.Admission = plugins.Admission{MaxConcurrent: 2, MaxQueued: 2, QueueTimeout: time.Minute}
			if mode == "worker" {
				sup, err := worker.NewSupervisor(worker.Options{CacheDir: testenv.CacheDir()})
				if err != nil {
					t.Fatal(err)
				}
				spec.Workers = sup
			}
			p := testenv.Load(t, testenv.Engine(t), spec)
			in := []byte(`{"tool":"ask","arguments":{}}`)

			release := make(chan struct{})
			asked := make(chan struct{}, 4)
			type outcome struct {
				out []byte
				err error
			}
			done := make(chan outcome, 4)
			hosts := make([]*waiter, 4)
			var wg sync.WaitGroup
			for i := range hosts {
				hosts[i] = &waiter{asked: asked, release: release}
				wg.Go(func() {
					out, err := p.Module.Call(ctx, in, hosts[i])
					done <- outcome{out, err}
				})
				if i < 2 {
					<-asked // running: it holds a slot
				} else {
					waitFor(t, "the call is queued", func() bool { return len(hosts[i].shown()) == 1 })
				}
			}
			// Two run, two wait: the fifth is refused at once.
			_, err := p.Module.Call(ctx, in, &waiter{asked: asked, release: release})
			want := `plugin "hang" is at its limit of 2 concurrent calls and 2 queued; try again later`
			var be *plugins.BusyError
			if !errors.As(err, &be) || err.Error() != want {
				t.Fatalf("Call(fifth) = %v; want %q", err, want)
			}
			if got := hosts[3].shown()[0]; !strings.Contains(got, `plugin "hang" is at its limit of 2 concurrent calls (1 calls ahead of this one)`) {
				t.Errorf("queued call shown %q; want its place in the queue", got)
			}
			close(release)
			wg.Wait()
			close(done)
			for o := range done {
				if o.err != nil || !strings.Contains(string(o.out), "answered") {
					t.Errorf("Call(ask) = %s, %v; want every admitted and queued call answered", o.out, o.err)
				}
			}
			for i, h := range hosts[2:] {
				if s := h.shown(); len(s) != 2 || s[1] != "" {
					t.Errorf("queued call %d shown %q; want its wait shown, then cleared", i, s)
				}
			}
		})
	}
}

// A call that waits queue_timeout for a slot is refused; one cancelled while it waits
// ends as cancelled; neither takes a slot.
func TestAdmissionWaitEnds(t *testing.T) {
	ctx := context.Background()
	spec := testenv.Spec(t, "hang", "testdata/wasm/hangunanswered.wasm")
	spec.Admission = plugins.Admission{MaxConcurrent: 1, MaxQueued: 4, QueueTimeout: 200 * time.Millisecond}
	p := testenv.Load(t, testenv.Engine(t), spec)
	in := []byte(`{"tool":"ask","arguments":{}}`)
	release := make(chan struct{})
	asked := make(chan struct{}, 4)
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = p.Module.Call(ctx, in, &waiter{asked: asked, release: release}) })
	<-asked

	_, err := p.Module.Call(ctx, in, &waiter{asked: asked, release: release})
	var be *plugins.BusyError
	if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), `plugin "hang" is at its limit of 1 concurrent calls: no slot came free within `) {
		t.Errorf("Call(queued past queue_timeout) = %v; want a refusal naming the limit", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = p.Module.Call(cctx, in, &waiter{asked: asked, release: release})
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindCanceled {
		t.Errorf("Call(cancelled in the queue) = %v; want cancelled", err)
	}
	close(release)
	wg.Wait()
	// The slot is free again: a call runs at once.
	if out, err := p.Module.Call(ctx, in, &waiter{asked: asked, release: release}); err != nil || !strings.Contains(string(out), "answered") {
		t.Errorf("Call(after the others) = %s, %v; want it answered", out, err)
	}
}

func TestDefaultMaxConcurrent(t *testing.T) {
	tests := []struct{ memoryMiB, want int }{
		{0, 32}, {64, 32}, {16, 64}, {1, 64}, {256, 8}, {1024, 4}, {4096, 4},
	}
	for _, tt := range tests {
		if got := plugins.DefaultMaxConcurrent(tt.memoryMiB); got != tt.want {
			t.Errorf("DefaultMaxConcurrent(%d) = %d, want %d", tt.memoryMiB, got, tt.want)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
	}
}
