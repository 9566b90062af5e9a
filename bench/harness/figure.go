package harness

import (
	"fmt"
	"slices"
	"time"
)

// Figure is one of the six figures: rows measured once per repetition, read as
// medians with their spread.
type Figure struct {
	N         int
	Title     string
	What      string // what is measured and how
	Baseline  string // what it is compared with
	Reproduce string // the command that measures this figure alone
	Rows      []*Row
	Targets   []Target
	Notes     []string
}

// Row is one measured quantity: one sample per repetition.
type Row struct {
	Label   string
	Unit    string
	Samples []float64
	Ratio   bool // a ratio of two rows of the same repetition
}

// Target is a goal from the issue with its outcome.
type Target struct {
	Variant string // the configuration of mcp-wasmhost it was measured in
	Goal    string // e.g. "C-guest round trip < 0.3 ms p50"
	Got     string
	Met     bool
	Why     string // what holds a missed target back
}

// row returns the row with label, adding it.
func (f *Figure) row(label, unit string) *Row {
	for _, r := range f.Rows {
		if r.Label == label {
			return r
		}
	}
	r := &Row{Label: label, Unit: unit}
	f.Rows = append(f.Rows, r)
	return r
}

// add records one sample of a row.
func (f *Figure) add(label, unit string, v float64) {
	r := f.row(label, unit)
	r.Samples = append(r.Samples, v)
}

// find returns the row with label, or nil.
func (f *Figure) find(label string) *Row {
	for _, r := range f.Rows {
		if r.Label == label {
			return r
		}
	}
	return nil
}

// ratio adds, for each repetition both rows have, num/den as a ratio row.
func (f *Figure) ratio(label, num, den string) {
	n, d := f.find(num), f.find(den)
	if n == nil || d == nil {
		return
	}
	r := f.row(label, "x")
	r.Ratio = true
	r.Samples = r.Samples[:0]
	for i := range min(len(n.Samples), len(d.Samples)) {
		if d.Samples[i] != 0 {
			r.Samples = append(r.Samples, n.Samples[i]/d.Samples[i])
		}
	}
}

// Median of the samples (0 if none).
func (r *Row) Median() float64 { return median(r.Samples) }

// Spread is the smallest and largest sample.
func (r *Row) Spread() (lo, hi float64) {
	if len(r.Samples) == 0 {
		return 0, 0
	}
	return slices.Min(r.Samples), slices.Max(r.Samples)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile of durations in microseconds (q in 0..1).
func percentile(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))].Nanoseconds()) / 1e3
}

// format renders a value for a table: 3 significant figures, thousands separated.
func format(v float64) string {
	switch {
	case v >= 10000:
		return group(fmt.Sprintf("%.0f", v))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func group(s string) string {
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
