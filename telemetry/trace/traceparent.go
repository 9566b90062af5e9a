package trace

import (
	oteltrace "go.opentelemetry.io/otel/trace"
)

// parseTraceparent is the remote span context of a W3C traceparent and tracestate,
// as the otel TraceContext propagator reads them (FuzzParseTraceparent holds the
// two to the same answers), without a context or a carrier to allocate: a version
// of two lower-case hex digits below ff, a trace ID, a parent ID and flags (of
// which sampled and random are kept); version 00 has nothing after the flags and
// no other flag bits. A tracestate that does not parse is dropped, the traceparent
// kept. Invalid: the span context is invalid.
func parseTraceparent(tp, ts string) oteltrace.SpanContext {
	var ver, flags [1]byte
	var scc oteltrace.SpanContextConfig
	if !hexPart(ver[:], &tp, 2) || ver[0] == 0xff || !hexPart(scc.TraceID[:], &tp, 32) ||
		!hexPart(scc.SpanID[:], &tp, 16) || !hexPart(flags[:], &tp, 2) {
		return oteltrace.SpanContext{}
	}
	if ver[0] == 0 && (tp != "" || flags[0] > 3) {
		return oteltrace.SpanContext{}
	}
	scc.TraceFlags = oteltrace.TraceFlags(flags[0]) & (oteltrace.FlagsSampled | oteltrace.FlagsRandom)
	if ts != "" {
		scc.TraceState, _ = oteltrace.ParseTraceState(ts)
	}
	scc.Remote = true
	sc := oteltrace.NewSpanContext(scc)
	if !sc.IsValid() {
		return oteltrace.SpanContext{}
	}
	return sc
}

// hexPart decodes the next n lower-case hex digits of *s into dst and moves *s past
// them and the "-" after them, if any. It fails unless exactly n digits come before
// the next "-" or the end.
func hexPart(dst []byte, s *string, n int) bool {
	part, rest := *s, ""
	for i := 0; i < len(part); i++ {
		if part[i] == '-' {
			part, rest = part[:i], part[i+1:]
			break
		}
	}
	*s = rest
	if len(part) != n {
		return false
	}
	for i := 0; i < n; i += 2 {
		hi, lo := unhex(part[i]), unhex(part[i+1])
		if hi > 15 || lo > 15 {
			return false
		}
		dst[i/2] = hi<<4 | lo
	}
	return true
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return 0xff
}
