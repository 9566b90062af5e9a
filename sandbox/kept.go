package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// Creating an instance costs wazero tens of microseconds and tens of kilobytes (two
// 10 KiB call stacks among them) even for a C guest of one page, while its call takes
// a few. So an instance of a restorable module (restorable.go) is kept after a call
// that ended cleanly and is put back, exactly, into the state every fresh instance
// starts in: the module's image, taken once from the first instance after its start
// function. Restoring writes the image over its linear memory and sets every mutable
// global; tables and segments cannot have changed (restorable refused the code that
// changes them), nor WASI state (wasi.go: a call that used a function that can
// change it is not kept). Each instance serves one call at a time.
//
// An instance is closed, never kept, when its call trapped, exited, ran past its time
// limit or was cancelled (wazero closes it then), when its memory grew (the image
// no longer covers it), when it made a WASI call that may leave state, or when the
// idle list is full. A module is never restored when it has directory grants (its
// file table could hold open files), when its image is over keptImageLimit, or when
// its start function called the host (random bytes, the clock: instances would not
// start alike); every instance is checked against the image before its first use.
const (
	keptIdle       = 8       // idle instances kept per module
	keptImageLimit = 1 << 20 // the largest linear memory restored by copying
)

// instance is one instance serving a call: fresh, or kept (stdio set).
type instance struct {
	mod     api.Module
	mem     *linearMemory
	stdio   *stdioSlot              // kept instances only: the call's stdout, stderr and sleep
	fns     map[string]api.Function // kept instances only: the exports called so far
	globals []api.MutableGlobal     // kept instances only, in the plan's order
}

// function returns the export, made once per kept instance (wazero gives every
// api.Function its own call stack).
func (in *instance) function(name string) api.Function {
	if in.fns == nil {
		return in.mod.ExportedFunction(name)
	}
	f, ok := in.fns[name]
	if !ok {
		f = in.mod.ExportedFunction(name)
		in.fns[name] = f
	}
	return f
}

// stdioSlot binds a kept instance's stdout, stderr and sleep to the call it serves:
// wazero fixes them when the instance is created.
type stdioSlot struct {
	stdout, stderr *limitedBuffer  // nil between calls: writes are dropped
	done           <-chan struct{} // the call's context's; nil between calls
}

func (s *stdioSlot) bind(ctx context.Context, st *callState) {
	s.stdout, s.stderr, s.done = &st.stdout, &st.stderr, ctx.Done()
}

func (s *stdioSlot) unbind() { s.stdout, s.stderr, s.done = nil, nil, nil }

// nanosleep is sleeper's for a kept instance.
func (s *stdioSlot) nanosleep(ns int64) {
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.done:
	}
}

type slotWriter struct {
	slot   *stdioSlot
	stderr bool
}

func (w slotWriter) Write(p []byte) (int, error) {
	b := w.slot.stdout
	if w.stderr {
		b = w.slot.stderr
	}
	if b == nil {
		return len(p), nil
	}
	return b.Write(p)
}

// keptInstances is a module's idle instances and the image they are restored to.
type keptInstances struct {
	plan *restorePlan // nil: the module is not restorable

	mu      sync.Mutex
	refused string // why instances are not kept after all; "" while they are
	image   []byte // linear memory after the start function; nil until the first instance
	values  []uint64
	idle    []*instance
	closed  bool

	reused atomic.Int64 // calls served by a restored instance
}

// enabled reports whether calls should look for a kept instance.
func (k *keptInstances) enabled() bool {
	if k.plan == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.refused == "" && !k.closed
}

func (k *keptInstances) refuse(logger *slog.Logger, why string) {
	k.mu.Lock()
	first := k.refused == ""
	if first {
		k.refused = why
	}
	k.mu.Unlock()
	if first {
		logger.Debug("instances of this plugin are not reused", slog.String("reason", why))
	}
}

// take returns an idle instance, or nil.
func (k *keptInstances) take() *instance {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := len(k.idle); n > 0 && k.refused == "" {
		in := k.idle[n-1]
		k.idle = k.idle[:n-1]
		return in
	}
	return nil
}

// check holds a new instance to the image, taking the image from the first one.
func (k *keptInstances) check(in *instance) error {
	mem := in.mod.Memory()
	size := mem.Size()
	if size > keptImageLimit {
		return fmt.Errorf("its linear memory of %d KiB is over the %d KiB restored by copying", size>>10, keptImageLimit>>10)
	}
	b, ok := mem.Read(0, size)
	if !ok {
		return fmt.Errorf("its linear memory cannot be read")
	}
	values := make([]uint64, len(in.globals))
	for i, g := range in.globals {
		values[i] = g.Get()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.image == nil {
		k.image, k.values = bytes.Clone(b), values
		return nil
	}
	if !bytes.Equal(k.image, b) || !slices.Equal(k.values, values) {
		return fmt.Errorf("two instances started in different states")
	}
	return nil
}

// put restores an instance whose call ended cleanly and keeps it; it reports false
// when the instance must be closed instead.
func (k *keptInstances) put(in *instance) bool {
	in.stdio.unbind()
	if in.mod.IsClosed() {
		return false
	}
	k.mu.Lock()
	image, values, full := k.image, k.values, k.closed || k.refused != "" || len(k.idle) >= keptIdle
	k.mu.Unlock()
	mem := in.mod.Memory()
	if full || image == nil || uint64(mem.Size()) != uint64(len(image)) {
		return false
	}
	if !mem.Write(0, image) {
		return false
	}
	for i, g := range in.globals {
		g.Set(values[i])
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed || len(k.idle) >= keptIdle {
		return false
	}
	k.idle = append(k.idle, in)
	return true
}

// drain stops keeping instances and returns the idle ones, to be closed.
func (k *keptInstances) drain() []*instance {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	idle := k.idle
	k.idle = nil
	return idle
}

// Reused returns how many calls a kept, restored instance served instead of a fresh one.
func (m *Module) Reused() int64 { return m.kept.reused.Load() }

// newKept creates an instance to keep; ctx must carry st. It is an instance like any
// fresh one, fit for this call even when it is not kept afterwards.
func (m *Module) newKept(ctx context.Context, st *callState, mem *linearMemory) (*instance, error) {
	slot := &stdioSlot{}
	slot.bind(ctx, st)
	cfg := m.config.WithStdout(slotWriter{slot: slot}).WithStderr(slotWriter{slot: slot, stderr: true}).WithNanosleep(slot.nanosleep)
	before := st.hostCalls
	mod, err := m.runtime.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), m.compiled, cfg)
	if err != nil {
		return &instance{mod: mod, mem: mem}, err
	}
	in := &instance{mod: mod, mem: mem, stdio: slot, fns: map[string]api.Function{}}
	for _, name := range m.kept.plan.globals {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			m.kept.refuse(m.logger, fmt.Sprintf("global %s is not mutable", name))
			return in, nil
		}
		in.globals = append(in.globals, g)
	}
	switch {
	case st.hostCalls != before:
		m.kept.refuse(m.logger, "its start function calls the host, so instances may not start alike")
	case st.tainted:
		m.kept.refuse(m.logger, "its start function changes its WASI state")
	default:
		if err := m.kept.check(in); err != nil {
			m.kept.refuse(m.logger, err.Error())
		}
	}
	return in, nil
}
