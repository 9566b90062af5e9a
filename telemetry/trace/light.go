package trace

import (
	"math/rand/v2"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// A finished span whose times are known only when it ends (the guest's queue,
// instantiate and run, measured in a worker; argument validation; a store
// operation) has no children and needs no object of its own: Record makes it as
// the few fields it has, on the stack, and encodes it (its name and attributes
// too) straight into the export queue.

type lightSpan struct {
	parent     oteltrace.SpanContext
	id         oteltrace.SpanID
	what       lightKind
	name       string         // plain: the name; store: the operation; run: the plugin
	err        string         // the error status's message, "" when ok
	start, end int64          // Unix ns
	report     sandbox.Report // run: its attributes
}

// lightKind is what a light span is, which says its name and attributes.
type lightKind uint8

const (
	lightPlain lightKind = iota // named name, no attributes
	lightStore                  // "task store {op}", db.operation.name
	lightRun                    // "run", the plugin and the report's figures
)

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

// newTraceID is a random, non-zero trace ID.
func newTraceID() oteltrace.TraceID {
	var id oteltrace.TraceID
	for id == (oteltrace.TraceID{}) {
		hi, lo := rand.Uint64(), rand.Uint64()
		for i := range 8 {
			id[i], id[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
		}
	}
	return id
}
