package host

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// maxQueuedStatuses bounds the task status notifications waiting to be written. A
// client that does not read its stream must not make the server hold every change
// of every task: past the bound the oldest are dropped (the notification is
// optional in 2025-11-25, and a client must not rely on it).
const maxQueuedStatuses = 4096

// statusQueue carries task states from the task manager, which reports each task's
// changes in the order it stored them and must not wait for I/O, to the one goroutine
// that writes notifications/tasks/status, in the same order.
type statusQueue struct {
	mu      sync.Mutex
	pending []tasks.Task
	wake    chan struct{} // 1 buffered: there is something pending
	stop    chan struct{}
	stopped sync.Once
	done    chan struct{}

	// pushed counts the states queued, sent those written (or dropped); progress is
	// closed and replaced whenever sent grows (flushed waits on it).
	pushed, sent uint64
	progress     chan struct{}
}

func newStatusQueue() *statusQueue {
	return &statusQueue{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), progress: make(chan struct{})}
}

// push queues t without blocking; it reports false when the oldest state queued was
// dropped to make room.
func (q *statusQueue) push(t tasks.Task) bool {
	q.mu.Lock()
	kept := len(q.pending) < maxQueuedStatuses
	if !kept {
		q.pending = q.pending[1:]
		q.advance(1)
	}
	q.pending = append(q.pending, t)
	q.pushed++
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return kept
}

// run writes queued states with send until close, then what is left.
func (q *statusQueue) run(send func(tasks.Task)) {
	defer close(q.done)
	for {
		select {
		case <-q.wake:
		case <-q.stop:
			q.drain(send)
			return
		}
		q.drain(send)
	}
}

func (q *statusQueue) drain(send func(tasks.Task)) {
	for {
		q.mu.Lock()
		batch := q.pending
		q.pending = nil
		q.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, t := range batch {
			send(t)
			q.mu.Lock()
			q.advance(1)
			q.mu.Unlock()
		}
	}
}

// advance counts n states as sent; q.mu is held.
func (q *statusQueue) advance(n uint64) {
	q.sent += n
	close(q.progress)
	q.progress = make(chan struct{})
}

// flushed waits until every state queued so far has been written, at most limit or
// until ctx ends: tasks/result sends its task's last status notification before the
// result, and a client that does not read its stream holds it no longer than limit.
func (q *statusQueue) flushed(ctx context.Context, limit time.Duration) {
	q.mu.Lock()
	target := q.pushed
	q.mu.Unlock()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		q.mu.Lock()
		sent, progress := q.sent, q.progress
		q.mu.Unlock()
		if sent >= target {
			return
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-q.done:
			return
		}
	}
}

// closeWait bounds how long close waits for the sender: a client that stopped reading
// its stream can hold a write, and must not hold the server's shutdown.
const closeWait = 5 * time.Second

// close stops run after it has written what was queued, and waits for it, at most
// until ctx ends or closeWait has passed. It may be called more than once.
func (q *statusQueue) close(ctx context.Context) error {
	q.stopped.Do(func() { close(q.stop) })
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(closeWait):
		return errors.New("task status notifications: the sender is still writing to a client that does not read")
	}
}
