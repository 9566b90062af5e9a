package trace

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	resourcev1 "go.opentelemetry.io/proto/otlp/resource/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// TestEncodeAsProto: the hand-encoded export decodes, with the generated OTLP
// types, to the message the SDK-based exporter built from the same spans: every
// kind of span, attribute, link and status the server makes.
func TestEncodeAsProto(t *testing.T) {
	remote := parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=x")
	if !remote.IsValid() {
		t.Fatal("the test's traceparent does not parse")
	}
	e := newExporter("http://x", nil, "svc", "v1")
	tr := &Tracer{q: newQueue(e.headroom())}
	req := tr.newSpan(remote, spanRequest, "tools/call")
	req.tool, req.session, req.protocol, req.network = "textkit_ping", "S1", "2025-11-25", "pipe"
	req.start, req.end = 1000, 2000
	req.errType, req.failed, req.status = "tool_error", true, "tool_error"
	root := tr.newSpan(oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: newTraceID()}), spanRequest, "ping")
	task := tr.newSpan(req.sc, spanTaskRun, "slow")
	task.links = []oteltrace.SpanContext{req.sc, root.sc}
	task.SetAttributes(attribute.Bool("b", true), attribute.Int("i", -3), attribute.Float64("f", 0.5),
		attribute.StringSlice("ss", []string{"x", ""}), attribute.String("s", ""))
	call := tr.newSpan(req.sc, spanHostCall, "host call http")
	run := lightSpan{parent: req.sc, id: newSpanID(), what: lightRun, name: "textkit", start: 10, end: 20,
		report: sandbox.Report{CPU: 1500 * time.Microsecond, MemoryBytes: 1 << 17, HostCalls: [sandbox.NumHostCalls]uint32{sandbox.HostHTTP: 2, sandbox.HostLog: 300}}}
	store := lightSpan{parent: req.sc, id: newSpanID(), what: lightStore, name: "put", start: 3, end: 4, err: "disk full"}
	plain := lightSpan{parent: req.sc, id: newSpanID(), what: lightPlain, name: "validate arguments", start: 5, end: 6}

	for _, s := range []*Span{req, root, task, call} {
		tr.q.push(s.encode(nil))
	}
	for _, s := range []lightSpan{run, store, plain} {
		tr.q.push(s.encode(nil))
	}
	got := &tracev1.TracesData{}
	if err := proto.Unmarshal(e.frame(tr.q.take().buf), got); err != nil {
		t.Fatalf("the export does not decode: %v", err)
	}

	str := func(k, v string) *commonv1.KeyValue {
		return &commonv1.KeyValue{Key: k, Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: v}}}
	}
	num := func(k string, v int64) *commonv1.KeyValue {
		return &commonv1.KeyValue{Key: k, Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_IntValue{IntValue: v}}}
	}
	ids := func(sc oteltrace.SpanContext) ([]byte, []byte) {
		tid, sid := sc.TraceID(), sc.SpanID()
		return tid[:], sid[:]
	}
	span := func(parent oteltrace.SpanContext, id oteltrace.SpanID, name string, kind tracev1.Span_SpanKind, start, end int64, flags uint32) *tracev1.Span {
		tid, pid := ids(parent)
		s := &tracev1.Span{TraceId: tid, SpanId: id[:], TraceState: parent.TraceState().String(), Name: name, Kind: kind,
			StartTimeUnixNano: uint64(start), EndTimeUnixNano: uint64(end), Flags: flags}
		if parent.SpanID().IsValid() {
			s.ParentSpanId = pid
		}
		return s
	}
	errStatus := func(msg string) *tracev1.Status {
		return &tracev1.Status{Code: tracev1.Status_STATUS_CODE_ERROR, Message: msg}
	}
	wantReq := span(remote, req.sc.SpanID(), "tools/call textkit_ping", tracev1.Span_SPAN_KIND_SERVER, 1000, 2000, 0x301)
	wantReq.Attributes = []*commonv1.KeyValue{str("mcp.method.name", "tools/call"), str("gen_ai.tool.name", "textkit_ping"),
		str("gen_ai.operation.name", "execute_tool"), str("mcp.session.id", "S1"), str("mcp.protocol.version", "2025-11-25"),
		str("network.transport", "pipe"), str("error.type", "tool_error")}
	wantReq.Status = errStatus("tool_error")
	wantRoot := span(root.parent, root.sc.SpanID(), "ping", tracev1.Span_SPAN_KIND_SERVER, root.start, root.end, 1)
	wantRoot.Attributes = []*commonv1.KeyValue{str("mcp.method.name", "ping")}
	wantTask := span(req.sc, task.sc.SpanID(), "task run slow", tracev1.Span_SPAN_KIND_INTERNAL, task.start, task.end, 1)
	wantTask.Attributes = []*commonv1.KeyValue{
		{Key: "b", Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_BoolValue{BoolValue: true}}}, num("i", -3),
		{Key: "f", Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_DoubleValue{DoubleValue: 0.5}}},
		{Key: "ss", Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_ArrayValue{ArrayValue: &commonv1.ArrayValue{Values: []*commonv1.AnyValue{
			{Value: &commonv1.AnyValue_StringValue{StringValue: "x"}}, {Value: &commonv1.AnyValue_StringValue{StringValue: ""}}}}}}},
		str("s", "")}
	for _, l := range task.links {
		tid, sid := ids(l)
		wantTask.Links = append(wantTask.Links, &tracev1.Span_Link{TraceId: tid, SpanId: sid, TraceState: l.TraceState().String()})
	}
	wantCall := span(req.sc, call.sc.SpanID(), "host call http", tracev1.Span_SPAN_KIND_INTERNAL, call.start, call.end, 1)
	wantRun := span(req.sc, run.id, "run", tracev1.Span_SPAN_KIND_INTERNAL, 10, 20, 1)
	wantRun.Attributes = []*commonv1.KeyValue{str("mcpwh.plugin", "textkit"), num("mcpwh.memory_bytes", 1<<17),
		{Key: "mcpwh.cpu_seconds", Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_DoubleValue{DoubleValue: 0.0015}}},
		num("mcpwh.host_calls.log", 300), num("mcpwh.host_calls.http", 2)}
	wantStore := span(req.sc, store.id, "task store put", tracev1.Span_SPAN_KIND_INTERNAL, 3, 4, 1)
	wantStore.Attributes = []*commonv1.KeyValue{str("db.operation.name", "put")}
	wantStore.Status = errStatus("disk full")
	wantPlain := span(req.sc, plain.id, "validate arguments", tracev1.Span_SPAN_KIND_INTERNAL, 5, 6, 1)

	want := &tracev1.TracesData{ResourceSpans: []*tracev1.ResourceSpans{{
		Resource: &resourcev1.Resource{Attributes: []*commonv1.KeyValue{str("service.name", "svc"), str("service.version", "v1")}},
		ScopeSpans: []*tracev1.ScopeSpans{{Scope: &commonv1.InstrumentationScope{Name: scopeName},
			Spans: []*tracev1.Span{wantReq, wantRoot, wantTask, wantCall, wantRun, wantStore, wantPlain}}},
	}}}
	if !proto.Equal(got, want) {
		t.Errorf("export decodes to\n%s\nwant\n%s", prototext.Format(got), prototext.Format(want))
	}
	if math.Abs(got.ResourceSpans[0].ScopeSpans[0].Spans[4].Attributes[2].Value.GetDoubleValue()-0.0015) > 1e-12 {
		t.Error("cpu_seconds is not 1.5 ms")
	}
}

// FuzzParseTraceparent: the traceparent parser agrees with the otel TraceContext
// propagator on every input.
func FuzzParseTraceparent(f *testing.F) {
	for _, s := range []string{
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03-extra", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-04", "",
	} {
		f.Add(s, "vendor=x,other=y")
	}
	f.Fuzz(func(t *testing.T, tp, ts string) {
		got := parseTraceparent(tp, ts)
		want := oteltrace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
			propagation.MapCarrier{"traceparent": tp, "tracestate": ts}))
		if tp == "" {
			want = oteltrace.SpanContext{} // the propagator reads no tracestate then either
		}
		if !got.Equal(want) || got.IsRemote() != want.IsRemote() {
			t.Errorf("parseTraceparent(%q, %q) = %v, want %v", tp, ts, got, want)
		}
	})
}

// TestDropsAreLogged: spans beyond the queue's room are dropped, counted, and said
// at warn with the next export; the queue has room again after it.
func TestDropsAreLogged(t *testing.T) {
	var received atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var td tracev1.TracesData
		if proto.Unmarshal(body, &td) == nil {
			received.Add(int64(len(td.ResourceSpans[0].ScopeSpans[0].Spans)))
		}
	}))
	defer sink.Close()
	var log bytes.Buffer
	// No export goroutine: the test exports when it chooses.
	exp := newExporter(sink.URL, nil, "svc", "")
	tr := &Tracer{always: true, q: newQueue(exp.headroom()), exp: exp, logger: slog.New(slog.NewTextHandler(&log, nil))}
	ctx, span := tr.StartRequest(context.Background(), &Request{Method: "tools/call", Tool: "a"})
	now := time.Now()
	for range maxQueued + 10 {
		tr.Record(ctx, "validate arguments", now, now, nil)
	}
	End(span, "", nil) // dropped too
	tr.export(context.Background())
	if got := received.Load(); got != maxQueued {
		t.Errorf("exported %d spans, want %d", got, maxQueued)
	}
	if !strings.Contains(log.String(), "spans dropped") || !strings.Contains(log.String(), "spans=11") {
		t.Errorf("no warning of the 11 dropped spans; log:\n%s", log.String())
	}
	tr.Record(ctx, "validate arguments", now, now, nil)
	log.Reset()
	tr.export(context.Background())
	if got := received.Load(); got != maxQueued+1 || log.Len() != 0 {
		t.Errorf("after the drops: %d spans exported, log %q; want one more and no warning", got-maxQueued, log.String())
	}
}
