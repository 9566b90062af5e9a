package worker

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// What a worker needs besides its calls' linear memory, in MiB.
const (
	// runtimeHeapMiB is the Go heap of an idle worker with its plugin compiled: the
	// runtime, wazero's compiled module and the frames in flight.
	runtimeHeapMiB = 256
	// instanceHeapMiB is wazero's Go heap per live instance besides its tables (a Go
	// guest's instance takes about 4.3 MiB).
	instanceHeapMiB = 8
	// addressSlackMiB is address space that is not the heap nor linear memory: compiled
	// code, thread stacks, the runtime's own reservations.
	addressSlackMiB = 4 << 10
)

// memoryPlan is what the supervisor tells a worker about memory.
type memoryPlan struct {
	// HeapMiB is the worker's Go memory limit (GOMEMLIMIT, runtime/debug.SetMemoryLimit):
	// the collector works harder as the heap nears it. 0 leaves the runtime's default.
	HeapMiB uint64
	// AddressSpaceMiB is the worker's RLIMIT_AS; 0 leaves it alone.
	AddressSpaceMiB uint64
}

// planMemory sizes a worker for concurrency calls at once (0 means
// [DefaultMaxConcurrent]) of a plugin with limits l.
//
// Every call may use memory_mib: its linear memory is reserved outside the Go heap
// (sandbox reserves it whole when the instance starts), and its tables, which count
// toward the same memory_mib, live on the heap. So the heap gets room for each call's
// tables and instance, and the address space for the heap (which may overshoot its
// soft limit up to twice before a collection catches up) and each call's linear memory.
// A call beyond the plan then fails to reserve its linear memory, as out of memory,
// before the runtime runs out: a worker dies of memory only when the heap itself
// overshoots by more than that.
func planMemory(l sandbox.Limits, concurrency int) memoryPlan {
	if concurrency <= 0 {
		concurrency = DefaultMaxConcurrent
	}
	mib, c := uint64(l.WithDefaults().MemoryMiB), uint64(concurrency)
	p := memoryPlan{HeapMiB: runtimeHeapMiB + c*(instanceHeapMiB+mib)}
	if !raceEnabled { // the race detector reserves terabytes of address space
		p.AddressSpaceMiB = addressSlackMiB + 2*p.HeapMiB + c*mib
	}
	return p
}

// applyHeapLimit sets the worker's Go memory limit.
func applyHeapLimit(mib uint64) {
	if mib != 0 {
		debug.SetMemoryLimit(int64(mib) << 20)
	}
}

// outOfMemory reports whether a line the Go runtime printed on a worker's stderr
// says it ran out of memory: "fatal error: out of memory", "runtime: out of memory:
// cannot allocate ...", "runtime: cannot allocate memory", or a thread it could not
// create for want of memory (errno 12, ENOMEM).
func outOfMemory(line string) bool {
	return strings.Contains(line, "out of memory") || strings.Contains(line, "cannot allocate") ||
		strings.Contains(line, "errno=12")
}

// crashOutput follows what a worker prints on stderr that is not a log record: once
// the runtime says it is out of memory, the rest (a dump of every goroutine) is counted,
// not logged, and one line says what happened.
type crashOutput struct {
	oom        string // the runtime's first out-of-memory line, if any
	suppressed int
}

// workerOutput handles one such line.
func (p *process) workerOutput(line string) {
	p.mu.Lock()
	quiet := true
	switch {
	case p.crash.oom != "":
		p.crash.suppressed++
	case outOfMemory(line):
		p.crash.oom = line
	default:
		quiet = false
	}
	p.mu.Unlock()
	if !quiet {
		p.logger.Warn("worker output", "text", line)
	}
}

// logCrash writes the one line for a worker that ran out of memory, once its stderr
// has ended.
func (p *process) logCrash() {
	p.mu.Lock()
	c := p.crash
	p.mu.Unlock()
	if c.oom != "" {
		p.logger.LogAttrs(context.Background(), slog.LevelError, "worker ran out of memory",
			slog.String("text", c.oom), slog.Int("suppressed_lines", c.suppressed))
	}
}

// ranOutOfMemory reports the runtime's out-of-memory line, if it printed one.
func (p *process) ranOutOfMemory() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.crash.oom, p.crash.oom != ""
}

// lostToMemory is the error of a call whose worker died of memory.
func (m *Module) lostToMemory(line string) error {
	return &sandbox.GuestError{Kind: sandbox.KindOutOfMemory, Message: fmt.Sprintf(
		"plugin %q ran out of memory: its worker process could not allocate more (%s) while running calls of up to %d MiB each; the call did not finish and may be retried",
		m.name, strings.TrimSpace(line), m.limits.MemoryMiB)}
}
