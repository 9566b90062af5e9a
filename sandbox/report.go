package sandbox

import (
	"context"
	"time"
)

// HostCall is a kind of host call a guest made, as a [Report] counts them.
type HostCall uint8

// Kinds of host call. A request is counted by its method: the input methods
// (elicit, elicit_all, sample) as HostInput, http and http_on_cancel as HostHTTP,
// every other method as HostOther.
const (
	HostLog HostCall = iota
	HostProgress
	HostInput
	HostHTTP
	HostOther
	NumHostCalls // the number of kinds
)

var hostCallNames = [NumHostCalls]string{"log", "progress", "input", "http", "other"}

// String is the kind's name, as the metrics and the report in _meta show it.
func (k HostCall) String() string {
	if k < NumHostCalls {
		return hostCallNames[k]
	}
	return "unknown"
}

// HostCallOf is the kind of a request with method.
func HostCallOf(method string) HostCall {
	switch method {
	case "elicit", "elicit_all", "sample", "input":
		return HostInput
	case "http", "http_on_cancel":
		return HostHTTP
	}
	return HostOther
}

// Report is what one call cost. The engine fills in what it measures; a zero field
// was not measured (CPU is only measured for a call that ran alone in its worker).
type Report struct {
	Queue       time.Duration // waiting for admission (plugins fills it in)
	Instantiate time.Duration // creating the fresh instance
	Run         time.Duration // running the export, waits for answers included
	// CPU is the CPU time of the process over the call (user + system), measured in
	// a worker only when no other call ran in it at the same time; 0 otherwise.
	CPU time.Duration
	// MemoryBytes is the size of the instance's linear memory at the end of the
	// call: its peak, as linear memory only grows.
	MemoryBytes uint64
	HostCalls   [NumHostCalls]uint32 // by kind
}

type reportKey struct{}

// WithReport returns a context in which a call fills in r as it runs: pass it to a
// module's Call. Calls in a worker fill it from the worker's report.
func WithReport(ctx context.Context, r *Report) context.Context {
	return context.WithValue(ctx, reportKey{}, r)
}

// ReportFrom returns the report a call in ctx fills in, or nil.
func ReportFrom(ctx context.Context) *Report {
	r, _ := ctx.Value(reportKey{}).(*Report)
	return r
}
