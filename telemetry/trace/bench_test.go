package trace

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// BenchmarkCallSpans is the tracing work of one sync tools/call of a C guest: the
// server span, validate arguments, the guest's spans from its report, exported
// over OTLP/HTTP to a collector on loopback. "unsampled": a client's traceparent
// said not sampled; "off": a nil Tracer.
func BenchmarkCallSpans(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer sink.Close()
	rep := &sandbox.Report{Queue: time.Microsecond, Instantiate: 50 * time.Microsecond, Run: 80 * time.Microsecond, MemoryBytes: 131072}
	for _, tc := range []struct {
		name string
		meta map[string]any
		off  bool
	}{
		{"sampled", nil, false},
		{"unsampled", map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}, false},
		{"off", nil, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var tr *Tracer
			if !tc.off {
				var err error
				if tr, err = New(Options{Endpoint: sink.URL}); err != nil {
					b.Fatal(err)
				}
				defer tr.Shutdown(context.Background())
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				r := Request{Method: "tools/call", Tool: "textkit_ping", Session: "S1", Protocol: "2025-11-25", Transport: "pipe", Meta: tc.meta}
				ctx, span := tr.StartRequest(context.Background(), &r)
				start := time.Now()
				tr.Record(ctx, "validate arguments", start, start.Add(5*time.Microsecond), nil)
				_, run := tr.GuestCall(ctx)
				tr.Guest(ctx, "textkit", start, start.Add(140*time.Microsecond), rep, run)
				End(span, "", nil)
			}
			if tr != nil {
				tr.flush(context.Background()) // the export's CPU is the call's too
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is this process's CPU time so far: the benchmark's and the exporter's.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
