package sandbox

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// When a burst of calls ends the Go heap they used (wazero's instances, tables, the
// documents) is garbage, but the runtime gives the memory back to the operating system
// only slowly: without allocation no collection runs, and a worker that served 120
// calls at once kept 3.6 GB for minutes while idle. So the engine collects and returns
// memory itself once the last instance of a burst has closed.
const (
	// burstInstances is how many instances must have been live at once for their end
	// to count as a burst: below it there is little to give back.
	burstInstances = 8
	// releaseQuiet is how long the engine must stay without instances before it
	// releases memory, so that back-to-back bursts do not pay for a collection each.
	releaseQuiet = time.Second
	// releaseEvery rate-limits the releases: each is a full collection.
	releaseEvery = 10 * time.Second
)

// releaser counts the engine's live instances and returns memory to the operating
// system after a burst: the idle linear memories, then the Go heap (debug.FreeOSMemory). Its goroutine runs only from the end of a
// burst to the release; close joins it.
type releaser struct {
	pool *memoryPool // drained at each release
	live atomic.Int64
	peak atomic.Int64 // most instances live at once since the last release

	mu      sync.Mutex
	running bool      // the goroutine is waiting to release
	closed  bool      // no goroutine starts any more
	last    time.Time // of the last release
	done    chan struct{}
	wg      sync.WaitGroup

	releases atomic.Int64 // how many releases ran, for tests and metrics
}

func newReleaser(pool *memoryPool) *releaser {
	return &releaser{pool: pool, done: make(chan struct{})}
}

// begin counts an instance created.
func (r *releaser) begin() {
	n := r.live.Add(1)
	for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
	}
}

// end counts an instance closed; the last one of a burst starts the releaser.
func (r *releaser) end() {
	if r.live.Add(-1) != 0 || r.peak.Load() < burstInstances {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running || r.closed {
		return
	}
	r.running = true
	wait := max(releaseQuiet, time.Until(r.last.Add(releaseEvery)))
	r.wg.Go(func() { r.release(wait) })
}

// release waits, then gives memory back unless another burst has begun meanwhile (its
// end starts the releaser again).
func (r *releaser) release(wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		if r.live.Load() == 0 {
			r.peak.Store(0)
			r.pool.drain()
			debug.FreeOSMemory()
			r.releases.Add(1)
			r.mu.Lock()
			r.last = time.Now()
			r.mu.Unlock()
		}
	}
	r.mu.Lock()
	r.running = false
	r.mu.Unlock()
}

// close stops a waiting release and joins it. It may be called more than once.
func (r *releaser) close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.done)
	}
	r.mu.Unlock()
	r.wg.Wait()
}
