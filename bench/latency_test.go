package bench

import (
	"slices"
	"testing"
	"time"
)

// latencies collects per-operation durations to report percentiles.
type latencies struct {
	b *testing.B
	d []time.Duration
}

func newLatencies(b *testing.B) *latencies { return &latencies{b: b} }

func (l *latencies) add(d time.Duration) { l.d = append(l.d, d) }

func (l *latencies) report() {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	at := func(q float64) float64 {
		return float64(l.d[int(q*float64(len(l.d)-1))].Nanoseconds()) / 1e3
	}
	l.b.ReportMetric(at(0.50), "p50-us")
	l.b.ReportMetric(at(0.99), "p99-us")
}
