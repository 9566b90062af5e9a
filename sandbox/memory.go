package sandbox

import (
	"fmt"

	"github.com/tetratelabs/wazero/experimental"
)

// linearMemory backs one instance's linear memory with a reservation of address space
// made once, up to the instance's limit: pages beyond the part in use are inaccessible
// and cost no memory, growth makes more of them accessible in place (no copy, no
// reallocation), and release returns all of it to the operating system at once.
//
// wazero's own linear memory is a Go slice that append grows: every growth copies it,
// and the old copies stay until the garbage collector and the scavenger return them,
// so an instance that grows to its limit in small steps costs several times the limit.
type linearMemory struct {
	limit     uint64 // bytes the guest may grow to
	mem       []byte // the reservation: accessible up to committed
	committed uint64
	allocated bool
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
	return l.mem[:size:size]
}

// Free implements experimental.LinearMemory. It does nothing: wazero calls it when the
// module closes, which can happen on another goroutine while guest code still runs
// (Runtime.Close), and unmapping memory under running code would crash the process.
// release unmaps it once the call is over.
func (l *linearMemory) Free() {}

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
