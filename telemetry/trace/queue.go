package trace

import (
	"context"
	"sync"
	"time"
)

// The span processor: every finished span, light or not, goes into one queue
// under one mutex (an append, no channel operation and no goroutine woken per
// span), and one goroutine of the Tracer's exports the queue every flushEvery, or
// as soon as it holds exportAt spans. The queue is two buffers: the exporter takes
// the one filled so far and hands back the one it sent last, emptied, so their
// capacity stays and a busy server appends without growing them.

const (
	exportAt   = 4096        // spans queued that wake the exporter
	maxQueued  = 4 * 4096    // spans queued beyond which new ones are dropped (and counted)
	flushEvery = time.Second // the longest a span waits for its export
)

type queue struct {
	mu      sync.Mutex
	light   []lightSpan
	spans   []*Span
	dropped int // since the last take
	spare   batch
	kick    chan struct{} // one pending wake-up for the exporter
}

// batch is what one export sends.
type batch struct {
	light   []lightSpan
	spans   []*Span
	dropped int // spans dropped before it, for want of room
}

func (b *batch) len() int { return len(b.light) + len(b.spans) }

func newQueue() *queue { return &queue{kick: make(chan struct{}, 1)} }

// room reports whether n more spans fit, counting them as dropped if not; the
// caller holds q.mu. full is whether the exporter should be woken.
func (q *queue) room(n int) (ok, full bool) {
	have := len(q.light) + len(q.spans)
	if have+n > maxQueued {
		q.dropped += n
		return false, false
	}
	return true, have < exportAt && have+n >= exportAt
}

func (q *queue) wake() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// pushLight queues finished light spans.
func (q *queue) pushLight(spans ...lightSpan) {
	q.mu.Lock()
	ok, full := q.room(len(spans))
	if ok {
		q.light = append(q.light, spans...)
	}
	q.mu.Unlock()
	if full {
		q.wake()
	}
}

// pushSpan queues an ended Span.
func (q *queue) pushSpan(s *Span) {
	q.mu.Lock()
	ok, full := q.room(1)
	if ok {
		q.spans = append(q.spans, s)
	}
	q.mu.Unlock()
	if full {
		q.wake()
	}
}

// take returns the spans queued so far and starts filling the spare buffers.
func (q *queue) take() batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := batch{light: q.light, spans: q.spans, dropped: q.dropped}
	q.light, q.spans, q.dropped = q.spare.light[:0], q.spare.spans[:0], 0
	q.spare = batch{}
	return b
}

// giveBack returns a batch's buffers, once sent, as the next spare ones.
func (q *queue) giveBack(b batch) {
	clear(b.spans) // the Spans may go; light spans are values, overwritten in place
	q.mu.Lock()
	q.spare = batch{light: b.light[:0], spans: b.spans[:0]}
	q.mu.Unlock()
}

// run is the exporter's goroutine: it exports when woken, every flushEvery, when
// asked to flush, and a last time when stop closes.
func (t *Tracer) run() {
	defer close(t.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		var flushed chan struct{}
		select {
		case <-t.q.kick:
		case <-tick.C:
		case flushed = <-t.flushc:
		case <-t.stop:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			t.export(ctx)
			cancel()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
		t.export(ctx)
		cancel()
		if flushed != nil {
			close(flushed)
		}
	}
}

// export sends what is queued; a failure, and spans dropped for want of room,
// are logged at warn.
func (t *Tracer) export(ctx context.Context) {
	b := t.q.take()
	if b.dropped > 0 && t.logger != nil {
		t.logger.Warn("spans dropped: the export queue was full", "spans", b.dropped, "max_queued", maxQueued)
	}
	if n := b.len(); n > 0 {
		if err := t.exp.send(ctx, &b); err != nil && t.logger != nil {
			t.logger.Warn("spans not exported", "spans", n, "err", err)
		}
	}
	t.q.giveBack(b)
}

// flush exports what is queued now and waits for it (tests, benchmarks).
func (t *Tracer) flush(ctx context.Context) {
	done := make(chan struct{})
	select {
	case t.flushc <- done:
	case <-t.done:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}
