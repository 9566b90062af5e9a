package trace

import (
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// A Span is a sampled span that has children or lives long: a request's server
// span, a task's run, a host call. It holds what its attributes are made of, not
// the attributes: End encodes them with the rest of the span (export.go), so a
// span costs one allocation and no copies of attribute values, and nothing of it
// but its bytes waits for the export.
// Its own methods (End, LinkTask) are for the goroutine that started it; its
// SpanContext may be read from any goroutine.
//
// A Span is an oteltrace.Span, so that it can be the current span of a context
// (oteltrace.ContextWithSpan) and whatever reads the trace context there
// (oteltrace.SpanContextFromContext, Inject) finds it. Of that interface it
// records attributes, status, links and its name; events are not recorded (the
// server makes none).
type Span struct {
	embedded.Span

	t      *Tracer
	sc     oteltrace.SpanContext // its own: trace, ID, flags (sampled), state
	parent oteltrace.SpanContext // invalid: a root
	what   spanKind
	// name is the span's name for a host call; a request's method; a task run's
	// tool. The exporter joins the rest of the name on.
	name                                 string
	tool, session, id, protocol, network string // a request's attributes
	start, end                           int64  // Unix ns
	errType, status                      string // error.type; the error status's message ("": ok)
	failed                               bool   // status is error
	rename                               string // SetName's: the name instead
	links                                []oteltrace.SpanContext
	attrs                                []attribute.KeyValue // SetAttributes, after the ones it is made with
	ended                                atomic.Bool
}

// spanKind is what a Span is, which says its name, kind and attributes.
type spanKind uint8

const (
	spanRequest  spanKind = iota // server; "{method} {tool}"; the MCP attributes
	spanTaskRun                  // internal; "task run {tool}"
	spanHostCall                 // internal; its name
)

var _ oteltrace.Span = (*Span)(nil)

// newSpan starts a span of kind what under parent (sampled: the caller checked),
// in parent's trace.
func (t *Tracer) newSpan(parent oteltrace.SpanContext, what spanKind, name string) *Span {
	sc := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: parent.TraceID(), SpanID: newSpanID(),
		TraceFlags: parent.TraceFlags() | oteltrace.FlagsSampled, TraceState: parent.TraceState()})
	return &Span{t: t, sc: sc, parent: parent, what: what, name: name, start: time.Now().UnixNano()}
}

// SpanContext is the span's trace context.
func (s *Span) SpanContext() oteltrace.SpanContext { return s.sc }

// IsRecording is true: a Span exists only when sampled. It stays true once the
// span has ended, so that a goroutine reading it need not synchronise with End.
func (s *Span) IsRecording() bool { return true }

// End ends the span and queues it for export; later calls do nothing.
func (s *Span) End(...oteltrace.SpanEndOption) {
	if !s.ended.CompareAndSwap(false, true) {
		return
	}
	s.end = time.Now().UnixNano()
	var scratch [512]byte
	s.t.q.push(s.encode(scratch[:0]))
}

// AddLink links the span to l's span context (its attributes are not kept).
func (s *Span) AddLink(l oteltrace.Link) {
	if l.SpanContext.IsValid() {
		s.links = append(s.links, l.SpanContext)
	}
}

// SetStatus sets the span's status: Error with its description, or Ok.
func (s *Span) SetStatus(code codes.Code, description string) {
	switch code {
	case codes.Error:
		s.failed, s.status = true, description
	case codes.Ok:
		s.failed, s.status = false, ""
	}
}

// SetName renames the span: it is then named name alone.
func (s *Span) SetName(name string) { s.rename = name }

// SetAttributes adds attributes, exported after the span's own.
func (s *Span) SetAttributes(kv ...attribute.KeyValue) { s.attrs = append(s.attrs, kv...) }

// RecordError sets an error status with err's message (no exception event).
func (s *Span) RecordError(err error, _ ...oteltrace.EventOption) {
	if err != nil {
		s.SetStatus(codes.Error, err.Error())
	}
}

// AddEvent does nothing: the server's spans have no events.
func (s *Span) AddEvent(string, ...oteltrace.EventOption) {}

// TracerProvider is a no-op provider: the server's spans are made by its Tracer.
func (s *Span) TracerProvider() oteltrace.TracerProvider { return noop.NewTracerProvider() }
