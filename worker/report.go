package worker

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// A report frame (W->S, before the call's result) carries the call's
// sandbox.Report: u64 instantiate ns, u64 run ns, u64 CPU ns (0: not measured),
// u64 linear memory bytes, u8 n, then n u32 host-call counts in sandbox.HostCall
// order. A count beyond the kinds this server knows is added to HostOther, so a
// newer worker may send more kinds.
const (
	reportFixed   = 4*8 + 1
	maxReportKind = 32
	// maxReportNanos bounds a duration in a report: about 146 years, far beyond any
	// call, and well inside time.Duration.
	maxReportNanos = 1 << 62
	// maxReportMemory is the most linear memory a wasm32 instance has: 65,536 pages.
	maxReportMemory = 1 << 32
)

func encodeReport(r *sandbox.Report) []byte {
	b := make([]byte, 0, reportFixed+4*int(sandbox.NumHostCalls))
	b = binary.BigEndian.AppendUint64(b, uint64(max(r.Instantiate, 0)))
	b = binary.BigEndian.AppendUint64(b, uint64(max(r.Run, 0)))
	b = binary.BigEndian.AppendUint64(b, uint64(max(r.CPU, 0)))
	b = binary.BigEndian.AppendUint64(b, r.MemoryBytes)
	b = append(b, byte(sandbox.NumHostCalls))
	for _, n := range r.HostCalls {
		b = binary.BigEndian.AppendUint32(b, n)
	}
	return b
}

// decodeReport reads a report frame's payload into r (whose Queue it leaves alone).
// It checks the length and every value's range before it writes anything.
func decodeReport(p []byte, r *sandbox.Report) error {
	if len(p) < reportFixed {
		return fmt.Errorf("report of %d bytes is shorter than %d", len(p), reportFixed)
	}
	n := int(p[reportFixed-1])
	if n > maxReportKind {
		return fmt.Errorf("report counts %d kinds of host call, more than %d", n, maxReportKind)
	}
	if len(p) != reportFixed+4*n {
		return fmt.Errorf("report of %d bytes, want %d for %d kinds", len(p), reportFixed+4*n, n)
	}
	var d [3]time.Duration
	for i, name := range [3]string{"instantiate", "run", "cpu"} {
		v := binary.BigEndian.Uint64(p[8*i:])
		if v >= maxReportNanos {
			return fmt.Errorf("report: %s time %d ns out of range", name, v)
		}
		d[i] = time.Duration(v)
	}
	mem := binary.BigEndian.Uint64(p[24:])
	if mem > maxReportMemory {
		return fmt.Errorf("report: memory of %d bytes out of range", mem)
	}
	var calls [sandbox.NumHostCalls]uint32
	for i := range n {
		v := binary.BigEndian.Uint32(p[reportFixed+4*i:])
		k := sandbox.HostCall(i)
		if k >= sandbox.NumHostCalls {
			k = sandbox.HostOther
		}
		if calls[k]+v < calls[k] {
			return fmt.Errorf("report: host call counts overflow")
		}
		calls[k] += v
	}
	r.Instantiate, r.Run, r.CPU, r.MemoryBytes, r.HostCalls = d[0], d[1], d[2], mem, calls
	return nil
}

// cpuMeter measures a call's CPU time in a worker: the process's CPU time over the
// call, kept only when no other call ran in the worker meanwhile (the process's
// time is then the call's, plus the worker's own little work).
type cpuMeter struct {
	running atomic.Int64  // calls running now
	starts  atomic.Uint64 // calls started so far
}

// begin starts measuring one call; end gives its CPU time, or 0.
func (m *cpuMeter) begin() (alone bool, gen uint64, cpu time.Duration) {
	gen = m.starts.Add(1)
	alone = m.running.Add(1) == 1
	if alone {
		cpu = processCPU()
	}
	return alone, gen, cpu
}

func (m *cpuMeter) end(alone bool, gen uint64, cpu time.Duration) time.Duration {
	var used time.Duration
	if alone && m.starts.Load() == gen {
		if now := processCPU(); now > cpu {
			used = now - cpu
		}
		if m.starts.Load() != gen { // another call began while reading
			used = 0
		}
	}
	m.running.Add(-1)
	return used
}
