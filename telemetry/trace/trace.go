package trace

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// Options configure a Tracer.
type Options struct {
	// Endpoint is the collector's base URL (spans go to its /v1/traces). Required.
	Endpoint string
	// SampleRatio is the share of new traces recorded, 0..1; a sampled
	// traceparent from the client is followed. 0 means 1.
	SampleRatio float64
	// Headers are sent with every export. Nil means none.
	Headers map[string]string
	// Service and Version name this server in the spans' resource.
	Service, Version string
	// Logger gets export failures and spans dropped for want of room (warn).
	// Nil discards them.
	Logger *slog.Logger
}

// Tracer makes the server's spans and exports them. Its methods are safe for
// concurrent use and do nothing on a nil *Tracer.
type Tracer struct {
	bound  uint64 // a new trace is sampled when its ID's low 63 bits are below it
	always bool   // every new trace is sampled
	q      *queue
	exp    *exporter
	logger *slog.Logger
	tasks  taskLinks

	flushc   chan chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{} // the export goroutine has returned
}

// New returns a Tracer that exports spans to opts.Endpoint from a goroutine of its
// own, until Shutdown.
func New(opts Options) (*Tracer, error) {
	if opts.Endpoint == "" {
		return nil, errors.New("tracing: no endpoint")
	}
	ratio := opts.SampleRatio
	if ratio <= 0 || ratio > 1 {
		ratio = 1
	}
	if opts.Service == "" {
		opts.Service = "mcp-wasmhost"
	}
	exp := newExporter(opts.Endpoint, opts.Headers, opts.Service, opts.Version)
	t := &Tracer{always: ratio >= 1, bound: uint64(ratio * (1 << 63)), q: newQueue(exp.headroom()), exp: exp, logger: opts.Logger,
		flushc: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	t.tasks.ids = map[string]*taskSpans{}
	go t.run()
	return t, nil
}

const scopeName = "github.com/mcp-wasmhost/mcp-wasmhost"

// Shutdown sends the spans still queued and stops the export goroutine; it
// returns ctx's error if that ends first.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.stopOnce.Do(func() { close(t.stop) })
	select {
	case <-t.done:
		t.exp.close()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sample decides on a new trace (no parent) the way the SDK's
// TraceIDRatioBased sampler does, from the trace ID's last 8 bytes.
func (t *Tracer) sample(id oteltrace.TraceID) bool {
	return t.always || binary.BigEndian.Uint64(id[8:16])>>1 < t.bound
}

// Request is what names and parents an MCP request's server span.
type Request struct {
	Method    string         // mcp.method.name
	Tool      string         // gen_ai.tool.name, for tools/call
	Session   string         // mcp.session.id, "" without a session
	ID        string         // jsonrpc.request.id, "" for a notification
	Protocol  string         // mcp.protocol.version
	Meta      map[string]any // params._meta: its traceparent and tracestate come first
	Header    http.Header    // the HTTP request's headers, nil on stdio
	Transport string         // network.transport: "pipe" (stdio) or "tcp" (HTTP)
}

// StartRequest starts the server span of r, named "{method} {tool}" (the MCP
// semantic conventions), as a child of the client's trace context if it sent one:
// a sampled parent is followed, an unsampled one too, and a new trace is sampled
// at the configured ratio. The span is nil when not sampled; the context carries
// the trace on either way (an egress request's traceparent).
func (t *Tracer) StartRequest(ctx context.Context, r *Request) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	parent := r.parent()
	sampled := parent.IsSampled()
	if !parent.IsValid() {
		tid := newTraceID()
		parent = oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: tid})
		sampled = t.sample(tid)
	}
	if !sampled {
		sc := parent.WithSpanID(newSpanID()).WithTraceFlags(parent.TraceFlags() &^ oteltrace.FlagsSampled).WithRemote(false)
		return oteltrace.ContextWithSpanContext(ctx, sc), nil
	}
	s := t.newSpan(parent, spanRequest, r.Method)
	s.tool, s.session, s.id, s.protocol, s.network = r.Tool, r.Session, r.ID, r.Protocol, r.Transport
	return oteltrace.ContextWithSpan(ctx, s), s
}

// parent is the client's trace context: params._meta's traceparent (MCP reserves
// it there), else the HTTP header's; invalid when neither is valid.
func (r *Request) parent() oteltrace.SpanContext {
	if tp, ok := r.Meta["traceparent"].(string); ok {
		ts, _ := r.Meta["tracestate"].(string)
		return parseTraceparent(tp, ts)
	}
	if r.Header != nil {
		if tp := r.Header.Get("Traceparent"); tp != "" {
			return parseTraceparent(tp, r.Header.Get("Tracestate"))
		}
	}
	return oteltrace.SpanContext{}
}

// End ends a span, with an error status if err is not nil or errType is not "".
// errType, if not "", is the error.type attribute (a JSON-RPC code,
// "tool_error"); the status's message is err's, else errType.
func End(span *Span, errType string, err error) {
	if span == nil {
		return
	}
	if err != nil || errType != "" {
		span.errType, span.failed, span.status = errType, true, errType
		if err != nil {
			span.status = err.Error()
		}
	}
	span.End()
}

// Start starts an internal child span of ctx's span named name (a host call), if
// that one is sampled; otherwise it returns ctx and nil, at no cost.
func (t *Tracer) Start(ctx context.Context, name string) (context.Context, *Span) {
	parent := oteltrace.SpanContextFromContext(ctx)
	if t == nil || !parent.IsSampled() {
		return ctx, nil
	}
	s := t.newSpan(parent, spanHostCall, name)
	return oteltrace.ContextWithSpan(ctx, s), s
}

// sampled reports whether ctx is in a trace this server records: its span (or the
// span context GuestCall put there) is sampled. Outside any request (the sweeper)
// there is none.
func (t *Tracer) sampled(ctx context.Context) bool {
	return t != nil && oteltrace.SpanContextFromContext(ctx).IsSampled()
}

// GuestCall prepares a guest call under ctx's span: the context it returns is the
// call's, in which host calls' spans are children of the call's run span. That
// span's ID is drawn now; Guest records it when the call has ended and its times are
// known.
func (t *Tracer) GuestCall(ctx context.Context) (context.Context, oteltrace.SpanID) {
	if !t.sampled(ctx) {
		return ctx, oteltrace.SpanID{}
	}
	id := newSpanID()
	sc := oteltrace.SpanContextFromContext(ctx).WithSpanID(id).WithRemote(false)
	return oteltrace.ContextWithSpanContext(ctx, sc), id
}

// Record adds a finished child span of ctx's span named name, if that one is
// sampled; err, if not nil, is its error status.
func (t *Tracer) Record(ctx context.Context, name string, start, end time.Time, err error) {
	parent := oteltrace.SpanContextFromContext(ctx)
	if t == nil || !parent.IsSampled() {
		return
	}
	ls := light(parent, lightPlain, name, start, end, err)
	var scratch [lightScratch]byte
	t.q.push(ls.encode(scratch[:0]))
}

// lightScratch is the stack space a light span is encoded in (a longer one
// spills to the heap).
const lightScratch = 256

func light(parent oteltrace.SpanContext, what lightKind, name string, start, end time.Time, err error) lightSpan {
	ls := lightSpan{parent: parent, id: newSpanID(), what: what, name: name, start: start.UnixNano(), end: end.UnixNano()}
	if err != nil {
		ls.err = err.Error()
	}
	return ls
}

// StoreOp makes a span of a task store operation (tasks.StoreObserver) under ctx's
// span; store operations of no recorded request (the sweeper's) get none.
func (t *Tracer) StoreOp(ctx context.Context, op string, start time.Time, err error) {
	parent := oteltrace.SpanContextFromContext(ctx)
	if t == nil || !parent.IsSampled() {
		return
	}
	ls := light(parent, lightStore, op, start, time.Now(), err)
	var scratch [lightScratch]byte
	t.q.push(ls.encode(scratch[:0]))
}

// MinQueueSpan is the shortest wait for an admission slot that gets a queue span: a
// call that found a slot free (a microsecond or two) gets none, as a span costs
// more than the wait.
const MinQueueSpan = 50 * time.Microsecond

// Guest adds the spans of a guest call that began at start and ended at end, from
// its report (copied): queue (admission, when it waited MinQueueSpan or more),
// instantiate and run, whose ID is run (from GuestCall; zero: a new one). In a
// worker these were measured there; the spans are placed back to back, ending at
// end.
func (t *Tracer) Guest(ctx context.Context, plugin string, start, end time.Time, r *sandbox.Report, run oteltrace.SpanID) {
	parent := oteltrace.SpanContextFromContext(ctx)
	if r == nil || t == nil || !parent.IsSampled() {
		return
	}
	var scratch [3 * lightScratch]byte
	var spans [3][]byte
	b, n := scratch[:0], 0
	add := func(ls lightSpan) {
		from := len(b)
		b = ls.encode(b)
		spans[n] = b[from:]
		n++
	}
	if r.Queue >= MinQueueSpan {
		add(light(parent, lightPlain, "queue", start, start.Add(r.Queue), nil))
	}
	if r.Run != 0 || r.Instantiate != 0 {
		runStart := end.Add(-r.Run)
		add(light(parent, lightPlain, "instantiate", runStart.Add(-r.Instantiate), runStart, nil))
		ls := light(parent, lightRun, plugin, runStart, end, nil)
		if run.IsValid() {
			ls.id = run
		}
		ls.report = *r
		add(ls)
	}
	if n > 0 {
		t.q.push(spans[:n]...)
	}
}

// Inject adds ctx's trace context to h (traceparent, tracestate): an egress request
// carries the trace on. Never baggage: what a client put there is not the
// upstream's to read.
func (t *Tracer) Inject(ctx context.Context, h http.Header) {
	if t == nil {
		return
	}
	if sc := oteltrace.SpanContextFromContext(ctx); sc.IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	}
}
