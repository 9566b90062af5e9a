package trace

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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
	// Logger gets export failures. Nil discards them.
	Logger *slog.Logger
}

// Tracer makes the server's spans. Its methods are safe for concurrent use and do
// nothing on a nil *Tracer.
type Tracer struct {
	exp   *exporter
	tp    *sdktrace.TracerProvider
	tr    oteltrace.Tracer
	prop  propagation.TraceContext
	tasks taskLinks
}

// New returns a Tracer that batches spans to opts.Endpoint.
func New(opts Options) (*Tracer, error) {
	if opts.Endpoint == "" {
		return nil, errors.New("tracing: no endpoint")
	}
	ratio := opts.SampleRatio
	if ratio <= 0 || ratio > 1 {
		ratio = 1
	}
	exp := newExporter(opts.Endpoint, opts.Headers)
	if opts.Service == "" {
		opts.Service = "mcp-wasmhost"
	}
	res := resource.NewSchemaless(attribute.String("service.name", opts.Service), attribute.String("service.version", opts.Version))
	var sampler sdktrace.Sampler = sdktrace.AlwaysSample()
	if ratio < 1 {
		sampler = sdktrace.TraceIDRatioBased(ratio)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sampler)),
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(loggingExporter{exp, opts.Logger}, sdktrace.WithMaxQueueSize(8192), sdktrace.WithMaxExportBatchSize(1024)),
	)
	exp.res = res
	t := &Tracer{exp: exp, tp: tp, tr: tp.Tracer(scopeName)}
	t.tasks.ids = map[string]*taskSpans{}
	return t, nil
}

const scopeName = "github.com/mcp-wasmhost/mcp-wasmhost"

// Shutdown sends the spans still queued and stops.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// loggingExporter logs a failed export once per failure (the SDK's default goes to
// the global otel error handler, which prints to stderr unformatted).
type loggingExporter struct {
	sdktrace.SpanExporter
	logger *slog.Logger
}

func (e loggingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil && e.logger != nil {
		e.logger.Warn("spans not exported", "spans", len(spans), "err", err)
	}
	return nil
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

var serverKind = []oteltrace.SpanStartOption{oteltrace.WithSpanKind(oteltrace.SpanKindServer)}

// StartRequest starts the server span of r, named "{method} {tool}" (the MCP
// semantic conventions), as a child of the client's trace context if it sent one.
func (t *Tracer) StartRequest(ctx context.Context, r *Request) (context.Context, oteltrace.Span) {
	if t == nil {
		return ctx, nil
	}
	ctx = t.parent(ctx, r)
	name := r.Method
	if r.Tool != "" {
		name = r.Method + " " + r.Tool
	}
	ctx, span := t.tr.Start(ctx, name, serverKind...)
	if span.IsRecording() {
		kv := make([]attribute.KeyValue, 0, 6)
		kv = append(kv, attribute.String("mcp.method.name", r.Method))
		if r.Tool != "" {
			kv = append(kv, attribute.String("gen_ai.tool.name", r.Tool), attribute.String("gen_ai.operation.name", "execute_tool"))
		}
		if r.Session != "" {
			kv = append(kv, attribute.String("mcp.session.id", r.Session))
		}
		if r.ID != "" {
			kv = append(kv, attribute.String("jsonrpc.request.id", r.ID))
		}
		if r.Protocol != "" {
			kv = append(kv, attribute.String("mcp.protocol.version", r.Protocol))
		}
		if r.Transport != "" {
			kv = append(kv, attribute.String("network.transport", r.Transport))
		}
		span.SetAttributes(kv...)
	}
	return ctx, span
}

// parent returns ctx with the client's trace context: params._meta's traceparent
// (MCP reserves it there), else the HTTP header's.
func (t *Tracer) parent(ctx context.Context, r *Request) context.Context {
	if tp, ok := r.Meta["traceparent"].(string); ok {
		c := metaCarrier{tp: tp}
		c.ts, _ = r.Meta["tracestate"].(string)
		return t.prop.Extract(ctx, &c)
	}
	if r.Header != nil && r.Header.Get("Traceparent") != "" {
		return t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	return ctx
}

// metaCarrier reads the trace context of a request's _meta.
type metaCarrier struct{ tp, ts string }

func (c *metaCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.tp
	case "tracestate":
		return c.ts
	}
	return ""
}
func (c *metaCarrier) Set(string, string) {}
func (c *metaCarrier) Keys() []string     { return []string{"traceparent", "tracestate"} }

// End ends a span, with an error status if err is not nil. errType, if not "",
// is the error.type attribute (a JSON-RPC code, "tool_error").
func End(span oteltrace.Span, errType string, err error) {
	if span == nil {
		return
	}
	if err != nil || errType != "" {
		if span.IsRecording() {
			if errType != "" {
				span.SetAttributes(attribute.String("error.type", errType))
			}
			msg := errType
			if err != nil {
				msg = err.Error()
			}
			span.SetStatus(codes.Error, msg)
		}
	}
	span.End()
}

// Start starts an internal child span of ctx's span, if that one is sampled;
// otherwise it returns ctx and nil, at no cost.
func (t *Tracer) Start(ctx context.Context, name string) (context.Context, oteltrace.Span) {
	if !t.sampled(ctx) {
		return ctx, nil
	}
	return t.tr.Start(ctx, name)
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

// Record adds a finished child span of ctx's span, if that one is sampled.
func (t *Tracer) Record(ctx context.Context, name string, start, end time.Time, err error, kv ...attribute.KeyValue) {
	t.record(ctx, oteltrace.SpanID{}, name, start, end, err, kv...)
}

// record is Record of a span whose ID is id (zero: a new one).
func (t *Tracer) record(ctx context.Context, id oteltrace.SpanID, name string, start, end time.Time, err error, kv ...attribute.KeyValue) {
	if !t.sampled(ctx) {
		return
	}
	if !id.IsValid() {
		id = newSpanID()
	}
	ls := lightSpan{parent: oteltrace.SpanContextFromContext(ctx), id: id, name: name, start: start, end: end, attrs: kv}
	if err != nil {
		ls.err = err.Error()
	}
	t.exp.light.push(ls)
}

// StoreOp makes a span of a task store operation (tasks.StoreObserver) under ctx's
// span; store operations of no recorded request (the sweeper's) get none.
func (t *Tracer) StoreOp(ctx context.Context, op string, start time.Time, err error) {
	t.Record(ctx, "task store "+op, start, time.Now(), err, attribute.String("db.operation.name", op))
}

// MinQueueSpan is the shortest wait for an admission slot that gets a queue span: a
// call that found a slot free (a microsecond or two) gets none, as a span costs
// more than the wait.
const MinQueueSpan = 50 * time.Microsecond

// Guest adds the spans of a guest call that began at start and ended at end, from
// its report: queue (admission, when it waited MinQueueSpan or more), instantiate
// and run, whose ID is run (from GuestCall; zero: a new one). In a worker these were
// measured there; the spans are placed back to back, ending at end.
func (t *Tracer) Guest(ctx context.Context, plugin string, start, end time.Time, r *sandbox.Report, run oteltrace.SpanID) {
	if r == nil || !t.sampled(ctx) {
		return
	}
	if r.Queue >= MinQueueSpan {
		t.Record(ctx, "queue", start, start.Add(r.Queue), nil)
	}
	if r.Run == 0 && r.Instantiate == 0 {
		return
	}
	runStart := end.Add(-r.Run)
	kv := make([]attribute.KeyValue, 0, 4+sandbox.NumHostCalls)
	kv = append(kv, attribute.String("mcpwh.plugin", plugin), attribute.Int64("mcpwh.memory_bytes", int64(r.MemoryBytes)))
	if r.CPU > 0 {
		kv = append(kv, attribute.Float64("mcpwh.cpu_seconds", r.CPU.Seconds()))
	}
	for k, n := range r.HostCalls {
		if n > 0 {
			kv = append(kv, attribute.Int("mcpwh.host_calls."+sandbox.HostCall(k).String(), int(n)))
		}
	}
	t.Record(ctx, "instantiate", runStart.Add(-r.Instantiate), runStart, nil)
	t.record(ctx, run, "run", runStart, end, nil, kv...)
}

// Inject adds ctx's trace context to h (traceparent, tracestate): an egress request
// carries the trace on. Never baggage: what a client put there is not the
// upstream's to read.
func (t *Tracer) Inject(ctx context.Context, h http.Header) {
	if t == nil {
		return
	}
	if sc := oteltrace.SpanContextFromContext(ctx); sc.IsValid() {
		t.prop.Inject(ctx, propagation.HeaderCarrier(h))
	}
}
