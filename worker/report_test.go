package worker

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

func TestReportRoundTrip(t *testing.T) {
	in := sandbox.Report{Instantiate: 3 * time.Millisecond, Run: 7 * time.Second, CPU: 11 * time.Microsecond,
		MemoryBytes: 17 << 16, HostCalls: [sandbox.NumHostCalls]uint32{1, 2, 3, 4, 5}}
	var out sandbox.Report
	out.Queue = time.Second // not the worker's to say
	if err := decodeReport(encodeReport(&in), &out); err != nil {
		t.Fatalf("decodeReport(encodeReport(%+v)) = %v", in, err)
	}
	want := in
	want.Queue = time.Second
	if out != want {
		t.Errorf("decodeReport(encodeReport(%+v)) = %+v, want %+v", in, out, want)
	}
}

func TestDecodeReportRefuses(t *testing.T) {
	good := encodeReport(&sandbox.Report{Run: time.Millisecond})
	set := func(off int, v uint64) []byte {
		b := append([]byte(nil), good...)
		binary.BigEndian.PutUint64(b[off:], v)
		return b
	}
	more := append(append([]byte(nil), good[:reportFixed-1]...), 40)
	for _, tc := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"short", good[:reportFixed-1]},
		{"truncated counts", good[:len(good)-1]},
		{"trailing byte", append(append([]byte(nil), good...), 0)},
		{"too many kinds", append(more, make([]byte, 4*40)...)},
		{"run out of range", set(8, 1<<63)},
		{"cpu out of range", set(16, maxReportNanos)},
		{"memory beyond 4 GiB", set(24, maxReportMemory+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sandbox.Report{Run: 42}
			if err := decodeReport(tc.p, &r); err == nil {
				t.Fatalf("decodeReport(%x) = nil, want an error", tc.p)
			}
			if r != (sandbox.Report{Run: 42}) {
				t.Errorf("decodeReport wrote %+v before refusing", r)
			}
		})
	}
}

func TestDecodeReportExtraKinds(t *testing.T) {
	// A newer worker's extra kinds count as other.
	p := encodeReport(&sandbox.Report{HostCalls: [sandbox.NumHostCalls]uint32{4: 1}})
	p[reportFixed-1] = byte(sandbox.NumHostCalls) + 2
	p = binary.BigEndian.AppendUint32(p, 2)
	p = binary.BigEndian.AppendUint32(p, 3)
	var r sandbox.Report
	if err := decodeReport(p, &r); err != nil {
		t.Fatal(err)
	}
	if got := r.HostCalls[sandbox.HostOther]; got != 6 {
		t.Errorf("HostCalls[other] = %d, want 6", got)
	}
}

func FuzzDecodeReport(f *testing.F) {
	f.Add(encodeReport(&sandbox.Report{Instantiate: 1, Run: 2, CPU: 3, MemoryBytes: 65536, HostCalls: [sandbox.NumHostCalls]uint32{1, 0, 1}}))
	f.Add([]byte{})
	f.Add(make([]byte, reportFixed))
	f.Fuzz(func(t *testing.T, p []byte) {
		var r sandbox.Report
		if err := decodeReport(p, &r); err != nil {
			return
		}
		if r.Instantiate < 0 || r.Run < 0 || r.CPU < 0 || r.MemoryBytes > maxReportMemory {
			t.Fatalf("decodeReport(%x) accepted %+v", p, r)
		}
		// What was accepted encodes to a report that decodes the same.
		var again sandbox.Report
		if err := decodeReport(encodeReport(&r), &again); err != nil || again != r {
			t.Fatalf("re-encoding %+v: %+v, %v", r, again, err)
		}
	})
}

func TestCPUMeterOverlap(t *testing.T) {
	var m cpuMeter
	a, ga, ca := m.begin()
	b, gb, cb := m.begin() // overlaps a
	if b {
		t.Errorf("second call counted as alone")
	}
	if got := m.end(a, ga, ca); got != 0 {
		t.Errorf("overlapped call measured %v, want 0", got)
	}
	m.end(b, gb, cb)
	alone, g, c := m.begin()
	for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
	}
	if got := m.end(alone, g, c); got <= 0 {
		t.Errorf("lone busy call measured %v, want > 0", got)
	}
}
