package trace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	resourcev1 "go.opentelemetry.io/proto/otlp/resource/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// exporter sends spans to an OTLP/HTTP collector as protobuf. It is a small
// exporter of its own: the OpenTelemetry one brings gRPC into the binary, for a
// wire this server never speaks. The body is a TracesData message, which has the
// field of an ExportTraceServiceRequest (resource_spans, 1) and so is one on the
// wire.
type exporter struct {
	url     string
	headers map[string]string
	client  *http.Client
	buf     []byte // the last export's body, reused (the SDK exports one batch at a time)
	kvs     kvCache
	light   lightQueue
	res     *resource.Resource
}

var _ sdktrace.SpanExporter = (*exporter)(nil)

// tracesURL is endpoint's /v1/traces, unless it names that path already.
func tracesURL(endpoint string) string {
	if strings.HasSuffix(endpoint, "/v1/traces") {
		return endpoint
	}
	return strings.TrimSuffix(endpoint, "/") + "/v1/traces"
}

func newExporter(endpoint string, headers map[string]string) *exporter {
	return &exporter{url: tracesURL(endpoint), headers: headers, client: &http.Client{Timeout: 10 * time.Second}}
}

func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	light := e.light.take()
	if len(spans) == 0 && len(light) == 0 {
		return nil
	}
	body, err := proto.MarshalOptions{}.MarshalAppend(e.buf[:0], e.encode(spans, light))
	if err != nil {
		return fmt.Errorf("encode %d spans: %w", len(spans), err)
	}
	if cap(body) <= 4<<20 {
		e.buf = body
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("export spans to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("export spans to %s: %s", e.url, resp.Status)
	}
	return nil
}

// Shutdown sends the light spans still queued.
func (e *exporter) Shutdown(ctx context.Context) error {
	err := e.ExportSpans(ctx, nil)
	e.client.CloseIdleConnections()
	return err
}

// encode puts spans and light spans into one TracesData: one resource (one
// provider), and the one scope of this package's tracer.
func (e *exporter) encode(spans []sdktrace.ReadOnlySpan, light []lightSpan) *tracev1.TracesData {
	ss := &tracev1.ScopeSpans{Scope: &commonv1.InstrumentationScope{Name: scopeName},
		Spans: make([]*tracev1.Span, 0, len(spans)+len(light))}
	var res []attribute.KeyValue
	if e.res != nil {
		res = e.res.Attributes()
	}
	for _, s := range spans {
		ss.Spans = append(ss.Spans, e.span(s))
	}
	for i := range light {
		ss.Spans = append(ss.Spans, light[i].proto(&e.kvs))
	}
	return &tracev1.TracesData{ResourceSpans: []*tracev1.ResourceSpans{{
		Resource: &resourcev1.Resource{Attributes: e.kvs.attrs(res)}, ScopeSpans: []*tracev1.ScopeSpans{ss}}}}
}

func (e *exporter) span(s sdktrace.ReadOnlySpan) *tracev1.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	out := &tracev1.Span{
		TraceId: tid[:], SpanId: sid[:], TraceState: sc.TraceState().String(),
		Name: s.Name(), Kind: tracev1.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano: uint64(s.StartTime().UnixNano()), EndTimeUnixNano: uint64(s.EndTime().UnixNano()),
		Attributes:             e.kvs.attrs(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		Flags:                  uint32(sc.TraceFlags()),
	}
	if p := s.Parent(); p.IsValid() {
		psid := p.SpanID()
		out.ParentSpanId = psid[:]
		if p.IsRemote() {
			out.Flags |= uint32(tracev1.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | tracev1.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out.Links = append(out.Links, &tracev1.Span_Link{TraceId: ltid[:], SpanId: lsid[:],
			TraceState: l.SpanContext.TraceState().String(), Attributes: e.kvs.attrs(l.Attributes)})
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, &tracev1.Span_Event{Name: ev.Name, TimeUnixNano: uint64(ev.Time.UnixNano()), Attributes: e.kvs.attrs(ev.Attributes)})
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		out.Status = &tracev1.Status{Code: tracev1.Status_STATUS_CODE_ERROR, Message: st.Description}
	case codes.Ok:
		out.Status = &tracev1.Status{Code: tracev1.Status_STATUS_CODE_OK}
	}
	return out
}

var _ = oteltrace.SpanKindServer // the proto's kinds number as otel's do

// kvCache keeps the encoded form of attributes seen before: most repeat from span
// to span (method, tool, plugin, protocol version, session), and an encoded
// KeyValue is read-only once built, so one serves every span that has it. Only
// exports use it, one at a time.
type kvCache map[attribute.KeyValue]*commonv1.KeyValue

// maxCachedKVs bounds the cache; when full it starts again empty.
const maxCachedKVs = 4096

func (c *kvCache) attrs(kvs []attribute.KeyValue) []*commonv1.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	if *c == nil || len(*c) >= maxCachedKVs {
		*c = kvCache{}
	}
	out := make([]*commonv1.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		if kv.Value.Type() == attribute.STRINGSLICE || kv.Value.Type() == attribute.INVALID {
			out = append(out, &commonv1.KeyValue{Key: string(kv.Key), Value: value(kv.Value)})
			continue
		}
		p := (*c)[kv]
		if p == nil {
			p = &commonv1.KeyValue{Key: string(kv.Key), Value: value(kv.Value)}
			(*c)[kv] = p
		}
		out = append(out, p)
	}
	return out
}

func value(v attribute.Value) *commonv1.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRINGSLICE:
		var vals []*commonv1.AnyValue
		for _, s := range v.AsStringSlice() {
			vals = append(vals, &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: s}})
		}
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_ArrayValue{ArrayValue: &commonv1.ArrayValue{Values: vals}}}
	}
	return &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: v.Emit()}}
}
