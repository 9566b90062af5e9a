package trace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// exporter sends spans to an OTLP/HTTP collector as protobuf. It is a small
// exporter of its own: the OpenTelemetry one brings gRPC into the binary, for a
// wire this server never speaks. The body is a TracesData message, which has the
// field of an ExportTraceServiceRequest (resource_spans, 1) and so is one on the
// wire. It is encoded by hand (protowire): each span when it ends, from the few
// fields it is made of (no attribute.KeyValue values, no message tree, no
// reflection), and at export only the header before the queued spans. Only the
// Tracer's export goroutine sends.
type exporter struct {
	url      string
	headers  map[string]string
	client   *http.Client
	resource []byte // the ResourceSpans.resource field
	scope    []byte // the ScopeSpans.scope field
}

// exportTimeout bounds one export.
const exportTimeout = 10 * time.Second

// tracesURL is endpoint's /v1/traces, unless it names that path already.
func tracesURL(endpoint string) string {
	if strings.HasSuffix(endpoint, "/v1/traces") {
		return endpoint
	}
	return strings.TrimSuffix(endpoint, "/") + "/v1/traces"
}

func newExporter(endpoint string, headers map[string]string, service, version string) *exporter {
	e := &exporter{url: tracesURL(endpoint), headers: headers, client: &http.Client{Timeout: exportTimeout}}
	var res []byte
	res = appendStringKV(res, 1, "service.name", service)
	res = appendStringKV(res, 1, "service.version", version)
	e.resource = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), res)
	scope := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), scopeName) // InstrumentationScope.name
	e.scope = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), scope)
	return e
}

// headroom is the most the header before the spans takes (frame), which each
// queue buffer leaves free at its start: two tags and lengths, the resource and
// the scope.
func (e *exporter) headroom() int {
	return 2*(1+protowire.SizeVarint(math.MaxUint32)) + len(e.resource) + len(e.scope)
}

// frame writes the TracesData header before the spans of buf (after its
// headroom) and returns the whole message: one resource (this server), one scope
// (this package), the spans.
func (e *exporter) frame(buf []byte) []byte {
	headroom := e.headroom()
	spans := len(buf) - headroom
	scopeSpans := len(e.scope) + spans
	resourceSpans := len(e.resource) + protowire.SizeTag(2) + protowire.SizeBytes(scopeSpans)
	size := protowire.SizeTag(1) + protowire.SizeVarint(uint64(resourceSpans)) + len(e.resource) +
		protowire.SizeTag(2) + protowire.SizeVarint(uint64(scopeSpans)) + len(e.scope)
	start := headroom - size
	head := protowire.AppendTag(buf[start:start], 1, protowire.BytesType) // TracesData.resource_spans, in the headroom
	head = protowire.AppendVarint(head, uint64(resourceSpans))
	head = append(head, e.resource...)
	head = protowire.AppendTag(head, 2, protowire.BytesType) // ResourceSpans.scope_spans
	head = protowire.AppendVarint(head, uint64(scopeSpans))
	_ = append(head, e.scope...)
	return buf[start:]
}

// send POSTs b's spans.
func (e *exporter) send(ctx context.Context, b *batch) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(e.frame(b.buf)))
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

func (e *exporter) close() { e.client.CloseIdleConnections() }

// Span message fields (opentelemetry/proto/trace/v1/trace.proto).
const (
	fTraceID    = 1
	fSpanID     = 2
	fTraceState = 3
	fParentID   = 4
	fName       = 5
	fKind       = 6
	fStart      = 7
	fEnd        = 8
	fAttributes = 9
	fLinks      = 13
	fStatus     = 15
	fFlags      = 16

	kindInternal = 1 // Span.SpanKind
	kindServer   = 2

	statusError = 2 // Status.StatusCode

	flagsHasIsRemote = 0x100 // SpanFlags
	flagsIsRemote    = 0x200
)

// appendHead appends the fields every span has: IDs, trace state, name (the
// concatenation of name parts), kind, times and flags.
func appendHead(b []byte, parent oteltrace.SpanContext, id oteltrace.SpanID, kind uint64, start, end int64, name ...string) []byte {
	tid := parent.TraceID()
	b = protowire.AppendTag(b, fTraceID, protowire.BytesType)
	b = protowire.AppendBytes(b, tid[:])
	b = protowire.AppendTag(b, fSpanID, protowire.BytesType)
	b = protowire.AppendBytes(b, id[:])
	if ts := parent.TraceState(); ts.Len() > 0 {
		b = protowire.AppendTag(b, fTraceState, protowire.BytesType)
		b = protowire.AppendString(b, ts.String())
	}
	if pid := parent.SpanID(); pid.IsValid() {
		b = protowire.AppendTag(b, fParentID, protowire.BytesType)
		b = protowire.AppendBytes(b, pid[:])
	}
	n := 0
	for _, part := range name {
		n += len(part)
	}
	b = protowire.AppendTag(b, fName, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	for _, part := range name {
		b = append(b, part...)
	}
	b = protowire.AppendTag(b, fKind, protowire.VarintType)
	b = protowire.AppendVarint(b, kind)
	b = protowire.AppendTag(b, fStart, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(start))
	b = protowire.AppendTag(b, fEnd, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, uint64(end))
}

// appendFlags appends the span's flags: its trace flags, and whether its parent
// is remote (only said of a remote one, as the SDK exporter does).
func appendFlags(b []byte, parent oteltrace.SpanContext, own oteltrace.TraceFlags) []byte {
	flags := uint32(own)
	if parent.IsValid() && parent.IsRemote() {
		flags |= flagsHasIsRemote | flagsIsRemote
	}
	b = protowire.AppendTag(b, fFlags, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, flags)
}

// appendStatus appends an error status with msg.
func appendStatus(b []byte, msg string) []byte {
	n := protowire.SizeTag(3) + protowire.SizeVarint(statusError)
	if msg != "" {
		n += protowire.SizeTag(2) + protowire.SizeBytes(len(msg))
	}
	b = protowire.AppendTag(b, fStatus, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	if msg != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType) // Status.message
		b = protowire.AppendString(b, msg)
	}
	b = protowire.AppendTag(b, 3, protowire.VarintType) // Status.code
	return protowire.AppendVarint(b, statusError)
}

// encode appends s's Span message.
func (s *Span) encode(b []byte) []byte {
	kind := uint64(kindInternal)
	var name []string
	switch {
	case s.rename != "":
		name = []string{s.rename}
	case s.what == spanRequest && s.tool != "":
		kind, name = kindServer, []string{s.name, " ", s.tool}
	case s.what == spanRequest:
		kind, name = kindServer, []string{s.name}
	case s.what == spanTaskRun:
		name = []string{"task run ", s.name}
	default:
		name = []string{s.name}
	}
	b = appendHead(b, s.parent, s.sc.SpanID(), kind, s.start, s.end, name...)
	if s.what == spanRequest {
		b = appendStringKV(b, fAttributes, "mcp.method.name", s.name)
		if s.tool != "" {
			b = appendStringKV(b, fAttributes, "gen_ai.tool.name", s.tool)
			b = appendStringKV(b, fAttributes, "gen_ai.operation.name", "execute_tool")
		}
		for _, kv := range [...]struct{ k, v string }{
			{"mcp.session.id", s.session}, {"jsonrpc.request.id", s.id},
			{"mcp.protocol.version", s.protocol}, {"network.transport", s.network},
		} {
			if kv.v != "" {
				b = appendStringKV(b, fAttributes, kv.k, kv.v)
			}
		}
	}
	if s.errType != "" {
		b = appendStringKV(b, fAttributes, "error.type", s.errType)
	}
	for _, kv := range s.attrs {
		b = appendKV(b, fAttributes, kv)
	}
	for _, l := range s.links {
		b = appendLink(b, l)
	}
	if s.failed {
		b = appendStatus(b, s.status)
	}
	return appendFlags(b, s.parent, s.sc.TraceFlags())
}

// hostCallKeys are the run span's attribute keys of each kind of host call.
var hostCallKeys = func() (keys [sandbox.NumHostCalls]string) {
	for k := range keys {
		keys[k] = "mcpwh.host_calls." + sandbox.HostCall(k).String()
	}
	return keys
}()

// encode appends s's Span message: a child of parent, in its trace, with its
// parent's trace flags.
func (s *lightSpan) encode(b []byte) []byte {
	switch s.what {
	case lightStore:
		b = appendHead(b, s.parent, s.id, kindInternal, s.start, s.end, "task store ", s.name)
		b = appendStringKV(b, fAttributes, "db.operation.name", s.name)
	case lightRun:
		b = appendHead(b, s.parent, s.id, kindInternal, s.start, s.end, "run")
		r := &s.report
		b = appendStringKV(b, fAttributes, "mcpwh.plugin", s.name)
		b = appendIntKV(b, fAttributes, "mcpwh.memory_bytes", int64(r.MemoryBytes))
		if r.CPU > 0 {
			b = appendDoubleKV(b, fAttributes, "mcpwh.cpu_seconds", r.CPU.Seconds())
		}
		for k, n := range r.HostCalls {
			if n > 0 {
				b = appendIntKV(b, fAttributes, hostCallKeys[k], int64(n))
			}
		}
	default:
		b = appendHead(b, s.parent, s.id, kindInternal, s.start, s.end, s.name)
	}
	if s.err != "" {
		b = appendStatus(b, s.err)
	}
	// A light span's parent is this server's (its trace flags are the span's own).
	b = protowire.AppendTag(b, fFlags, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, uint32(s.parent.TraceFlags()))
}

// appendLink appends a Span.Link to sc.
func appendLink(b []byte, sc oteltrace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	ts := sc.TraceState().String()
	n := protowire.SizeTag(1) + protowire.SizeBytes(len(tid)) + protowire.SizeTag(2) + protowire.SizeBytes(len(sid))
	if ts != "" {
		n += protowire.SizeTag(3) + protowire.SizeBytes(len(ts))
	}
	b = protowire.AppendTag(b, fLinks, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, tid[:])
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, sid[:])
	if ts != "" {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, ts)
	}
	return b
}

// A KeyValue is {key 1: string, value 2: AnyValue}; an AnyValue is one of
// {string_value 1, bool_value 2, int_value 3, double_value 4, array_value 5}.

// appendKV appends field, a KeyValue of key and an AnyValue of size value,
// whose content the caller appends next.
func appendKVHead(b []byte, field protowire.Number, key string, value int) []byte {
	n := protowire.SizeTag(1) + protowire.SizeBytes(len(key)) + protowire.SizeTag(2) + protowire.SizeBytes(value)
	b = protowire.AppendTag(b, field, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, key)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(value))
}

func appendStringKV(b []byte, field protowire.Number, key, v string) []byte {
	b = appendKVHead(b, field, key, protowire.SizeTag(1)+protowire.SizeBytes(len(v)))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func appendIntKV(b []byte, field protowire.Number, key string, v int64) []byte {
	b = appendKVHead(b, field, key, protowire.SizeTag(3)+protowire.SizeVarint(uint64(v)))
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func appendDoubleKV(b []byte, field protowire.Number, key string, v float64) []byte {
	b = appendKVHead(b, field, key, protowire.SizeTag(4)+protowire.SizeFixed64())
	b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

func appendBoolKV(b []byte, field protowire.Number, key string, v bool) []byte {
	b = appendKVHead(b, field, key, protowire.SizeTag(2)+protowire.SizeVarint(protowire.EncodeBool(v)))
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeBool(v))
}

// appendKV appends an attribute set through the oteltrace.Span interface.
func appendKV(b []byte, field protowire.Number, kv attribute.KeyValue) []byte {
	key := string(kv.Key)
	switch kv.Value.Type() {
	case attribute.BOOL:
		return appendBoolKV(b, field, key, kv.Value.AsBool())
	case attribute.INT64:
		return appendIntKV(b, field, key, kv.Value.AsInt64())
	case attribute.FLOAT64:
		return appendDoubleKV(b, field, key, kv.Value.AsFloat64())
	case attribute.STRINGSLICE:
		var arr []byte // ArrayValue{values 1: AnyValue}
		for _, s := range kv.Value.AsStringSlice() {
			arr = protowire.AppendTag(arr, 1, protowire.BytesType)
			arr = protowire.AppendVarint(arr, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(s))))
			arr = protowire.AppendTag(arr, 1, protowire.BytesType)
			arr = protowire.AppendString(arr, s)
		}
		b = appendKVHead(b, field, key, protowire.SizeTag(5)+protowire.SizeBytes(len(arr)))
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		return protowire.AppendBytes(b, arr)
	}
	return appendStringKV(b, field, key, kv.Value.Emit())
}
