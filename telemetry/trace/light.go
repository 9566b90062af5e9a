package trace

import (
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
)

// A finished span whose times are known only when it ends (the guest's instantiate
// and run, measured in a worker; argument validation; a store operation) has no
// children and needs none of the SDK's span machinery: Record queues it here, as
// the few fields it has, and the exporter sends it with the next batch. That costs
// a fraction of a span started and ended through the SDK (BenchmarkCallSpans).

// maxLight bounds the finished spans waiting for an export; beyond it they are
// dropped, as the SDK's queue drops its own.
const maxLight = 8192

type lightSpan struct {
	parent     oteltrace.SpanContext
	id         oteltrace.SpanID
	name       string
	start, end time.Time
	err        string
	attrs      []attribute.KeyValue
}

// lightQueue holds finished light spans until the next export takes them.
type lightQueue struct {
	mu      sync.Mutex
	spans   []lightSpan
	dropped int
}

func (q *lightQueue) push(s lightSpan) {
	q.mu.Lock()
	if len(q.spans) < maxLight {
		q.spans = append(q.spans, s)
	} else {
		q.dropped++
	}
	q.mu.Unlock()
}

// take returns the queued spans and empties the queue.
func (q *lightQueue) take() []lightSpan {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.spans
	q.spans = nil
	return s
}

// newSpanID is a random, non-zero span ID.
func newSpanID() oteltrace.SpanID {
	var id oteltrace.SpanID
	for id == (oteltrace.SpanID{}) {
		v := rand.Uint64()
		for i := range id {
			id[i] = byte(v >> (8 * i))
		}
	}
	return id
}

// proto encodes a light span.
func (s *lightSpan) proto(kvs *kvCache) *tracev1.Span {
	tid, pid := s.parent.TraceID(), s.parent.SpanID()
	out := &tracev1.Span{
		TraceId: tid[:], SpanId: append([]byte(nil), s.id[:]...), ParentSpanId: pid[:],
		TraceState: s.parent.TraceState().String(), Name: s.name, Kind: tracev1.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: uint64(s.start.UnixNano()), EndTimeUnixNano: uint64(s.end.UnixNano()),
		Attributes: kvs.attrs(s.attrs), Flags: uint32(s.parent.TraceFlags()),
	}
	if s.err != "" {
		out.Status = &tracev1.Status{Code: tracev1.Status_STATUS_CODE_ERROR, Message: s.err}
	}
	return out
}
