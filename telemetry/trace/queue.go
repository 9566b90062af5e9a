package trace

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The span processor: a span is encoded as OTLP protobuf the moment it ends
// (export.go), straight into bytes on the ending goroutine's stack, and appended
// to one queue under one mutex: no channel operation, no goroutine woken and no
// object kept per span. What waits for the export is bytes, which the garbage
// collector does not scan (a queue of span structs, with their strings and trace
// states, was scanned at every GC cycle). One goroutine of the Tracer's exports
// the queue every flushEvery, or as soon as it holds exportAt spans. The queue is
// two buffers: the exporter takes the one filled so far and hands back the one it
// sent last, emptied, so their capacity stays and a busy server appends without
// growing them. Each buffer starts with room for the export's header, so the
// export sends it as it is (exporter.frame).

const (
	exportAt      = 4096        // spans queued that wake the exporter
	maxQueued     = 4 * 4096    // spans queued beyond which new ones are dropped (and counted)
	maxQueueBytes = 8 << 20     // the same, in bytes
	flushEvery    = time.Second // the longest a span waits for its export
)

type queue struct {
	mu       sync.Mutex
	buf      []byte // headroom, then ScopeSpans.spans fields
	n        int    // spans in buf
	dropped  int    // since the last take
	spare    []byte
	headroom int
	kick     chan struct{} // one pending wake-up for the exporter
}

// batch is what one export sends.
type batch struct {
	buf     []byte // as queue.buf
	n       int
	dropped int // spans dropped before it, for want of room
}

func newQueue(headroom int) *queue {
	return &queue{kick: make(chan struct{}, 1), headroom: headroom, buf: make([]byte, headroom, headroom+4096)}
}

// push queues finished spans, each the encoded body of a Span message.
func (q *queue) push(spans ...[]byte) {
	size := 0
	for _, s := range spans {
		size += protowire.SizeTag(2) + protowire.SizeBytes(len(s))
	}
	q.mu.Lock()
	if q.n+len(spans) > maxQueued || len(q.buf)+size > maxQueueBytes {
		q.dropped += len(spans)
		q.mu.Unlock()
		return
	}
	for _, s := range spans {
		q.buf = protowire.AppendTag(q.buf, 2, protowire.BytesType) // ScopeSpans.spans
		q.buf = protowire.AppendBytes(q.buf, s)
	}
	full := q.n < exportAt && q.n+len(spans) >= exportAt
	q.n += len(spans)
	q.mu.Unlock()
	if full {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

// take returns the spans queued so far and starts filling the spare buffer.
func (q *queue) take() batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := batch{buf: q.buf, n: q.n, dropped: q.dropped}
	q.buf, q.n, q.dropped = q.spare, 0, 0
	if q.buf == nil {
		q.buf = make([]byte, q.headroom, cap(b.buf))
	}
	q.spare = nil
	return b
}

// giveBack returns a batch's buffer, once sent, as the next spare one.
func (q *queue) giveBack(b batch) {
	if cap(b.buf) > 2*maxQueueBytes {
		return // grown by spans too large for the queue to keep: let it go
	}
	q.mu.Lock()
	q.spare = b.buf[:q.headroom]
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
	if n := b.n; n > 0 {
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
