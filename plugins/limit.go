package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// Admission bounds how many calls of one plugin run at once and how many wait for a
// turn. Each field's zero value means its default.
type Admission struct {
	// MaxConcurrent is how many calls (each a fresh instance) may run at once. 0 means
	// [DefaultMaxConcurrent] of the plugin's memory limit.
	MaxConcurrent int
	// MaxQueued is how many more calls may wait for a free slot; past it a call is
	// refused at once. 0 means [QueuedPerSlot] times MaxConcurrent.
	MaxQueued int
	// QueueTimeout is how long a call may wait for a slot before it is refused. 0
	// means [DefaultQueueTimeout].
	QueueTimeout time.Duration
}

// The admission defaults. A plugin's instances may use MemoryBudgetMiB of linear
// memory together; the instance count this allows is kept within
// [MinDefaultConcurrent, MaxDefaultConcurrent].
const (
	MemoryBudgetMiB      = 2048
	MinDefaultConcurrent = 4
	MaxDefaultConcurrent = 64
	QueuedPerSlot        = 16
	DefaultQueueTimeout  = 30 * time.Second
)

// DefaultMaxConcurrent is the default number of concurrent calls of a plugin whose
// linear memory is capped at memoryMiB: [MemoryBudgetMiB] / memoryMiB, kept within
// [MinDefaultConcurrent, MaxDefaultConcurrent] (64 MiB: 32 calls; 16 MiB: 64).
func DefaultMaxConcurrent(memoryMiB int) int {
	if memoryMiB <= 0 {
		memoryMiB = sandbox.Limits{}.WithDefaults().MemoryMiB
	}
	return min(max(MemoryBudgetMiB/memoryMiB, MinDefaultConcurrent), MaxDefaultConcurrent)
}

// WithDefaults returns a with every zero field set to its default for a plugin whose
// linear memory is capped at memoryMiB.
func (a Admission) WithDefaults(memoryMiB int) Admission {
	if a.MaxConcurrent <= 0 {
		a.MaxConcurrent = DefaultMaxConcurrent(memoryMiB)
	}
	if a.MaxQueued <= 0 {
		a.MaxQueued = QueuedPerSlot * a.MaxConcurrent
	}
	if a.QueueTimeout <= 0 {
		a.QueueTimeout = DefaultQueueTimeout
	}
	return a
}

// BusyError refuses a call because its plugin is at its limit: all its slots are
// taken and the queue is full, or the call waited QueueTimeout in the queue. Nothing
// of the call ran, so it may be sent again later. The host answers it as a JSON-RPC
// error (-32000), in a task as the task's failure.
type BusyError struct {
	Plugin string
	Limit  int           // MaxConcurrent
	Queued int           // MaxQueued, when the queue was full
	Waited time.Duration // how long the call waited, when its wait timed out
}

func (e *BusyError) Error() string {
	if e.Waited > 0 {
		return fmt.Sprintf("plugin %q is at its limit of %d concurrent calls: no slot came free within %s; try again later",
			e.Plugin, e.Limit, e.Waited)
	}
	return fmt.Sprintf("plugin %q is at its limit of %d concurrent calls and %d queued; try again later",
		e.Plugin, e.Limit, e.Queued)
}

// Waiter is implemented by a [sandbox.Host] that can show a person that a call waits
// for a slot (the host sets a task's statusMessage). Waiting is called with a message
// when the call starts to wait, and with "" when it gets its slot or gives up.
type Waiter interface {
	Waiting(ctx context.Context, msg string)
}

// limiter is a Runner that admits at most MaxConcurrent calls at once to the Runner
// it wraps and queues at most MaxQueued more, in arrival order.
type limiter struct {
	Runner
	name string
	adm  Admission

	mu      sync.Mutex
	running int
	queue   []chan struct{} // waiting calls, oldest first; a send hands one a slot
}

// Limit wraps r so that it runs at most adm.MaxConcurrent calls at once. Describe is
// admitted like Call.
func Limit(name string, r Runner, adm Admission) Runner {
	return &limiter{Runner: r, name: name, adm: adm.WithDefaults(r.Limits().MemoryMiB)}
}

func (l *limiter) Describe(ctx context.Context) ([]byte, error) {
	if err := l.acquire(ctx, nil); err != nil {
		return nil, err
	}
	defer l.release()
	return l.Runner.Describe(ctx)
}

func (l *limiter) Call(ctx context.Context, input []byte, h sandbox.Host) ([]byte, error) {
	rep := sandbox.ReportFrom(ctx)
	var start time.Time
	if rep != nil {
		start = time.Now()
	}
	if err := l.acquire(ctx, h); err != nil {
		return nil, err
	}
	if rep != nil {
		rep.Queue = time.Since(start)
	}
	defer l.release()
	return l.Runner.Call(ctx, input, h)
}

// Admission returns the limits in force, defaults filled in.
func (l *limiter) Admission() Admission { return l.adm }

// acquire takes a slot, waiting in the queue if all are taken.
func (l *limiter) acquire(ctx context.Context, h sandbox.Host) error {
	l.mu.Lock()
	if l.running < l.adm.MaxConcurrent {
		l.running++
		l.mu.Unlock()
		return nil
	}
	if len(l.queue) >= l.adm.MaxQueued {
		l.mu.Unlock()
		return &BusyError{Plugin: l.name, Limit: l.adm.MaxConcurrent, Queued: l.adm.MaxQueued}
	}
	turn := make(chan struct{}, 1)
	l.queue = append(l.queue, turn)
	ahead := len(l.queue) - 1
	l.mu.Unlock()

	w, _ := h.(Waiter)
	if w != nil {
		w.Waiting(ctx, fmt.Sprintf("queued since %s: plugin %q is at its limit of %d concurrent calls (%d calls ahead of this one)",
			time.Now().UTC().Format(time.RFC3339), l.name, l.adm.MaxConcurrent, ahead))
		defer w.Waiting(ctx, "")
	}
	start := time.Now()
	timer := time.NewTimer(l.adm.QueueTimeout)
	defer timer.Stop()
	var err error
	select {
	case <-turn:
		return nil // release handed its slot over: running already counts it
	case <-timer.C:
		err = &BusyError{Plugin: l.name, Limit: l.adm.MaxConcurrent, Waited: time.Since(start).Round(time.Millisecond)}
	case <-ctx.Done():
		err = l.canceled(ctx)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, c := range l.queue {
		if c == turn {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			return err
		}
	}
	// release handed this call a slot as it gave up: pass it on.
	<-turn
	l.releaseLocked()
	return err
}

// canceled is the error of a call whose context ended while it waited for a slot.
func (l *limiter) canceled(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &sandbox.GuestError{Kind: sandbox.KindTimeout, Err: ctx.Err(),
			Message: fmt.Sprintf("plugin %q: the call's deadline passed while it waited for one of the plugin's %d slots", l.name, l.adm.MaxConcurrent)}
	}
	return &sandbox.GuestError{Kind: sandbox.KindCanceled, Err: ctx.Err(),
		Message: fmt.Sprintf("plugin %q: the call was cancelled while it waited for one of the plugin's %d slots", l.name, l.adm.MaxConcurrent)}
}

func (l *limiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked()
}

// releaseLocked hands the slot to the oldest waiting call, or frees it.
func (l *limiter) releaseLocked() {
	if len(l.queue) == 0 {
		l.running--
		return
	}
	next := l.queue[0]
	l.queue = l.queue[1:]
	next <- struct{}{}
}
