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
// system (debug.FreeOSMemory) after a burst. Its goroutine is joined by close.
type releaser struct {
	live atomic.Int64
	peak atomic.Int64 // most instances live at once since the last release
	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	releases atomic.Int64 // how many releases ran, for tests and metrics
}

func newReleaser() *releaser {
	r := &releaser{wake: make(chan struct{}, 1), done: make(chan struct{})}
	r.wg.Go(r.loop)
	return r
}

// begin counts an instance created.
func (r *releaser) begin() {
	n := r.live.Add(1)
	for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
	}
}

// end counts an instance closed; the last one of a burst wakes the releaser.
func (r *releaser) end() {
	if r.live.Add(-1) == 0 && r.peak.Load() >= burstInstances {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

func (r *releaser) loop() {
	var last time.Time
	for {
		select {
		case <-r.done:
			return
		case <-r.wake:
		}
		wait := max(releaseQuiet, time.Until(last.Add(releaseEvery)))
		t := time.NewTimer(wait)
		select {
		case <-r.done:
			t.Stop()
			return
		case <-t.C:
		}
		if r.live.Load() != 0 {
			continue // another burst began: its end wakes the releaser again
		}
		r.peak.Store(0)
		debug.FreeOSMemory()
		last = time.Now()
		r.releases.Add(1)
	}
}

func (r *releaser) close() {
	close(r.done)
	r.wg.Wait()
}
