package worker

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// DefaultProcesses is how many worker processes share a plugin's calls when
// [Spec.Processes] is 0. With more than one, a call that gets its worker killed takes
// down only the calls in that worker, and calls of different owners go to different
// workers where they can (see [Affinity]).
const DefaultProcesses = 2

// A worker that dies is restarted at once, in the background. One that dies again
// within healthyAfter of starting, or cannot start, is restarted after a delay that
// doubles from restartBackoffMin up to restartBackoffMax, so that a crash loop does not
// spin the machine.
const (
	restartBackoffMin = 100 * time.Millisecond
	restartBackoffMax = 10 * time.Second
	healthyAfter      = 10 * time.Second
)

// restartWait bounds how long a call waits for a worker that is starting or restarting.
const restartWait = 30 * time.Second

// maxAttempts bounds how often a call that never reached a worker is sent again.
const maxAttempts = 3

// Affinity is implemented by a [sandbox.Host] whose calls should run in the same
// worker as other calls with the same key, and apart from calls with other keys where
// the plugin has several workers. The host gives the owner of the call (its client);
// "" means no preference, and the call goes to the least loaded worker.
type Affinity interface {
	Affinity() string
}

// slotOf is the index of key's slot among n: FNV-1a, so that a key's worker is the
// same from run to run (the keys are the server's own owner names, which a client
// cannot choose freely).
func slotOf(key string, n int) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64() % uint64(n))
}

// slot is one place in a plugin's pool: at most one worker process at a time,
// restarted by its supervising goroutine when it dies.
type slot struct {
	m    *Module
	load atomic.Int64 // calls running in this slot's worker now

	mu      sync.Mutex
	cur     *process      // nil while the worker starts or restarts
	up      chan struct{} // closed when cur is set; replaced when cur dies
	err     error         // why the last start failed, until a start succeeds
	started bool          // a worker has run in this slot (false while the first one starts)
}

// alive reports whether the slot's worker runs now.
func (s *slot) alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur != nil && !isClosed(s.cur.dead)
}

// first reports whether the slot's first worker is still starting: the calls keyed to
// the slot wait for it rather than join another slot's worker, or every client would
// share the first worker (and its fate) until the others were up.
func (s *slot) first() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.started && s.err == nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// get returns the slot's running worker, waiting up to wait while it restarts. A worker that
// failed to start fails the call at once with the reason.
func (s *slot) get(ctx context.Context, wait time.Duration) (*process, error) {
	var timeout <-chan time.Time // started at the first wait: most calls find their worker up
	for {
		s.mu.Lock()
		p, up, err := s.cur, s.up, s.err
		s.mu.Unlock()
		switch {
		case s.m.isClosed():
			return nil, fmt.Errorf("plugin %q is unloaded", s.m.name)
		case p != nil && !isClosed(p.dead):
			return p, nil
		case p != nil:
			s.died(p) // its supervisor will restart it; wait for that below
			continue
		case err != nil:
			return nil, &sandbox.GuestError{Kind: sandbox.KindAborted, Message: fmt.Sprintf(
				"plugin %q: its worker process could not be restarted (%v); it is retried in the background", s.m.name, err)}
		}
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		var why error
		select {
		case <-up:
			continue
		case <-s.m.done:
			continue
		case <-ctx.Done():
			why = ctx.Err()
		case <-timeout:
			why = context.DeadlineExceeded
		}
		return nil, &sandbox.GuestError{Kind: sandbox.KindAborted, Err: why, Message: fmt.Sprintf(
			"plugin %q: its worker process was restarting and was not ready in time (%v)", s.m.name, why)}
	}
}

// died forgets p if it is the slot's worker: calls then wait for the next one.
func (s *slot) died(p *process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == p {
		s.cur, s.up = nil, make(chan struct{})
	}
}

// set makes p the slot's worker. It reports false once the plugin is closing; the
// caller then stops p.
func (s *slot) set(ctx context.Context, p *process) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	s.cur, s.err, s.started = p, nil, true
	close(s.up)
	return true
}

func (s *slot) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
	close(s.up) // wake the waiting calls: they fail with err
	s.up = make(chan struct{})
}

// supervise keeps a worker running in the slot until ctx ends, starting with p (nil:
// none yet). Close stops the last worker.
func (s *slot) supervise(ctx context.Context, p *process) {
	quick := 0 // deaths and failed starts in a row, each soon after its start
	for {
		if p != nil {
			started := time.Now()
			select {
			case <-p.dead:
			case <-ctx.Done():
				return
			}
			s.died(p)
			if ctx.Err() != nil {
				return
			}
			if time.Since(started) >= healthyAfter {
				quick = 0
			}
			s.m.logger.Warn("worker process stopped; restarting it", "pid", p.cmd.Process.Pid, "reason", p.reason(), "after", restartDelay(quick))
			s.m.sup.events.WorkerRestarted(s.m.name, p.stopReason())
		}
		if d := restartDelay(quick); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		quick++
		np, err := s.m.start(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.m.logger.Error("worker process could not be restarted", "err", err, "retry_in", restartDelay(quick))
			s.failed(err)
			p = nil
			continue
		}
		if !s.set(ctx, np) {
			np.stop(StopUnloaded, "the plugin was unloaded", time.Second)
			return
		}
		p = np
	}
}

// restartDelay is the wait before the next start after n quick failures in a row.
func restartDelay(n int) time.Duration {
	if n == 0 {
		return 0
	}
	d := restartBackoffMin << min(n-1, 16)
	return min(d, restartBackoffMax)
}

// pick chooses the slot for a call: the one its affinity key hashes to while that
// slot's worker runs or its first worker starts, otherwise the least loaded slot whose
// worker runs, otherwise the least loaded slot.
func (m *Module) pick(h sandbox.Host) *slot {
	if len(m.slots) == 1 {
		return m.slots[0]
	}
	if a, ok := h.(Affinity); ok {
		if key := a.Affinity(); key != "" {
			if s := m.slots[slotOf(key, len(m.slots))]; s.alive() || s.first() {
				return s
			}
		}
	}
	var best, bestAlive *slot
	for _, s := range m.slots {
		if best == nil || s.load.Load() < best.load.Load() {
			best = s
		}
		if s.alive() && (bestAlive == nil || s.load.Load() < bestAlive.load.Load()) {
			bestAlive = s
		}
	}
	if bestAlive != nil {
		return bestAlive
	}
	return best
}

func (m *Module) isClosed() bool { return isClosed(m.done) }
