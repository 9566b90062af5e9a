// Package trace makes the server's OpenTelemetry spans and sends them over
// OTLP/HTTP ([server.tracing]): one server span per MCP request, named and
// attributed per the OpenTelemetry semantic conventions for MCP, parented by the
// W3C traceparent in the request's _meta or else its HTTP header; children for
// argument validation, the guest's queue, instantiation and run, each host call and
// each task store operation; links from a task's run and its tasks/* requests to its
// creation. An egress request carries the trace on (Inject).
//
// It uses the otel API's types (SpanContext, the W3C propagator) but not the SDK:
// a span here is the few fields it is made of (span.go, light.go), queued when it
// ends in one double-buffered queue (queue.go) and encoded as OTLP protobuf by
// hand when exported (export.go), so that a traced call costs a few microseconds
// (BenchmarkCallSpans) and a call in a trace that is not sampled nearly nothing.
//
// Workers run no exporter: the server builds a worker call's queue, instantiate and
// run spans from the durations in its report frame (sandbox.Report). A nil *Tracer
// is valid and does nothing, at no cost.
package trace
