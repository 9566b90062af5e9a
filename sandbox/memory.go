package sandbox

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// linearMemory backs one instance's linear memory with a reservation of address space
// made once, up to the instance's limit: pages beyond the part in use are inaccessible
// and cost no memory, growth makes more of them accessible in place (no copy, no
// reallocation), and release returns all of it to the operating system at once.
// Between instances a reservation waits in the engine's [memoryPool].
//
// wazero's own linear memory is a Go slice that append grows: every growth copies it,
// and the old copies stay until the garbage collector and the scavenger return them,
// so an instance that grows to its limit in small steps costs several times the limit.
type linearMemory struct {
	limit     uint64 // bytes the guest may grow to
	mem       []byte // the reservation: accessible up to committed
	committed uint64
	allocated bool
	size      uint64        // the linear memory's size now (the last Reallocate)
	held      *atomic.Int64 // while its instance is live: the module's count of live memory, kept in step with size
}

var (
	_ experimental.MemoryAllocator = (*linearMemory)(nil)
	_ experimental.LinearMemory    = (*linearMemory)(nil)
)

// reserveMemory reserves limit bytes of address space. It fails when the process has no
// address space left (the worker's RLIMIT_AS): the call then fails as out of memory
// before wazero allocates anything for it.
func reserveMemory(limit uint64) (*linearMemory, error) {
	mem, err := reserve(roundToOSPage(max(limit, 1)))
	if err != nil {
		return nil, fmt.Errorf("reserve %d MiB of address space for linear memory: %w", ceilMiB(limit), err)
	}
	return &linearMemory{limit: limit, mem: mem}, nil
}

// Allocate implements experimental.MemoryAllocator. A module has at most one memory
// (wazero v1.12.0 supports no more, and Load refuses imported ones), so it is called at
// most once per instance; a second memory would get none.
func (l *linearMemory) Allocate(_, _ uint64) experimental.LinearMemory {
	if l.allocated {
		return noMemory{}
	}
	l.allocated = true
	return l
}

// Reallocate implements experimental.LinearMemory: it makes size bytes accessible, or
// returns nil (memory.grow then returns -1) beyond the limit.
func (l *linearMemory) Reallocate(size uint64) []byte {
	if size > l.limit || l.mem == nil {
		return nil
	}
	if size > l.committed {
		end := min(roundToOSPage(size), uint64(len(l.mem)))
		if err := commit(l.mem[l.committed:end]); err != nil {
			return nil
		}
		l.committed = end
	}
	if l.held != nil {
		l.held.Add(int64(size) - int64(l.size))
	}
	l.size = size
	return l.mem[:size:size]
}

// hold counts the memory's size, now and as it grows, in held (Module.liveMemory)
// until unhold: its instance is live. Both run on the goroutine that uses the
// instance, as Reallocate does.
func (l *linearMemory) hold(held *atomic.Int64) {
	l.held = held
	held.Add(int64(l.size))
}

func (l *linearMemory) unhold() {
	if l.held != nil {
		l.held.Add(-int64(l.size))
		l.held = nil
	}
}

// Free implements experimental.LinearMemory. It does nothing: wazero calls it when the
// module closes, which can happen on another goroutine while guest code still runs
// (Runtime.Close), and unmapping memory under running code would crash the process.
// release unmaps it once the call is over.
func (l *linearMemory) Free() {}

// scrub zeroes the reservation for its next instance, which may serve another client:
// it clears the first warmBytes in place (they stay resident) and has the operating
// system drop the rest (they read as zero and cost nothing until touched again). It
// reports false where the platform cannot drop pages; the reservation must then be
// released instead.
func (l *linearMemory) scrub() bool {
	warm := min(l.committed, warmBytes)
	if l.committed > warm {
		if err := discard(l.mem[warm:l.committed]); err != nil {
			return false
		}
	}
	clear(l.mem[:warm])
	l.allocated, l.size = false, 0
	return true
}

// release returns the reservation to the operating system. The instance must be closed
// and no goroutine may touch its memory any more.
func (l *linearMemory) release() {
	if l.mem != nil {
		_ = unreserve(l.mem) // fails only for a range that is not mapped
		l.mem = nil
	}
}

// noMemory is a linear memory that cannot be allocated.
type noMemory struct{}

func (noMemory) Reallocate(uint64) []byte { return nil }
func (noMemory) Free()                    {}

// Reservations are reused: a page touched for the first time costs a page fault, about
// 100 us each on the loaded virtual machine measured (a C guest's whole call took 31 us,
// and a fresh reservation per call made it 340 us), while pages kept from an earlier
// instance cost only clearing.
const (
	// poolIdle is how many idle reservations an engine keeps; more are unmapped.
	poolIdle = 16
	// warmBytes is how much of an idle reservation stays resident (zeroed); the rest
	// goes back to the operating system as soon as its instance closes.
	warmBytes = 8 << 20
)

// memoryPool keeps idle linear-memory reservations for the next instances. It holds
// at most poolIdle x warmBytes resident; drain, after a burst and at close, unmaps them.
type memoryPool struct {
	mu   sync.Mutex
	idle map[uint64][]*linearMemory // by limit
	n    int
}

// get returns a zeroed reservation of limit bytes: an idle one, or a new one.
func (p *memoryPool) get(limit uint64) (*linearMemory, error) {
	p.mu.Lock()
	if s := p.idle[limit]; len(s) > 0 {
		l := s[len(s)-1]
		p.idle[limit] = s[:len(s)-1]
		p.n--
		p.mu.Unlock()
		return l, nil
	}
	p.mu.Unlock()
	return reserveMemory(limit)
}

// put takes back a reservation whose instance is closed: scrubbed and kept, or
// unmapped when the pool is full.
func (p *memoryPool) put(l *linearMemory) {
	if l.scrub() {
		p.mu.Lock()
		if p.n < poolIdle {
			if p.idle == nil {
				p.idle = map[uint64][]*linearMemory{}
			}
			p.idle[l.limit] = append(p.idle[l.limit], l)
			p.n++
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	l.release()
}

// drain unmaps every idle reservation.
func (p *memoryPool) drain() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.n = nil, 0
	p.mu.Unlock()
	for _, s := range idle {
		for _, l := range s {
			l.release()
		}
	}
}
