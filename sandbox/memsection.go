package sandbox

import (
	"errors"
	"fmt"
)

// MemoryTooSmallError is a plugin whose module starts with more linear memory than
// its limit (memory_mib) allows: it could never be instantiated.
type MemoryTooSmallError struct {
	Plugin    string
	Pages     uint32 // the module's initial memory, in 64 KiB pages
	LimitMiB  int    // the plugin's memory limit
	NeededMiB int    // the smallest limit that holds the initial memory
}

func (e *MemoryTooSmallError) Error() string {
	return fmt.Sprintf("plugin %q starts with %d pages (%d KiB) of linear memory, over its memory limit of %d MiB: raise memory_mib to at least %d",
		e.Plugin, e.Pages, uint64(e.Pages)*64, e.LimitMiB, e.NeededMiB)
}

// initialMemory returns the minimum of the first memory the module defines (the
// memory section, WebAssembly core 5.5.6), in pages; ok is false when it defines none.
// Like boundTables it checks every byte: the module has not been validated yet, and
// a malformed one is left for the compiler to refuse with its own message.
func initialMemory(wasm []byte) (pages uint32, ok bool, err error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return 0, false, errors.New("no WebAssembly header")
	}
	for off := 8; off < len(wasm); {
		id := wasm[off]
		size, n, err := readU32(wasm[off+1:])
		if err != nil {
			return 0, false, fmt.Errorf("section at offset %d: %w", off, err)
		}
		start := off + 1 + n
		if uint64(size) > uint64(len(wasm)-start) {
			return 0, false, fmt.Errorf("section at offset %d: size %d runs past the end", off, size)
		}
		end := start + int(size)
		if id == 5 {
			body := wasm[start:end]
			count, n, err := readU32(body)
			if err != nil || count == 0 {
				return 0, false, err
			}
			if n >= len(body) {
				return 0, false, errors.New("memory section: truncated limits")
			}
			min, _, err := readU32(body[n+1:]) // after the limits' flags byte
			if err != nil {
				return 0, false, fmt.Errorf("memory section: %w", err)
			}
			return min, true, nil
		}
		off = end
	}
	return 0, false, nil
}

// CheckInitialMemory refuses a module whose initial memory is over limitMiB with a
// *MemoryTooSmallError naming the memory_mib that would hold it. wazero refuses it
// too, but in its own terms ("min 46 pages (2 Mi) over limit of 32 pages (2 Mi)").
// A module it cannot read is left to the compiler to refuse. [Engine.Load] checks it.
func CheckInitialMemory(name string, wasm []byte, limitMiB int) error {
	pages, ok, err := initialMemory(wasm)
	if err != nil || !ok || uint64(pages) <= uint64(limitMiB)*16 {
		return nil
	}
	return &MemoryTooSmallError{Plugin: name, Pages: pages, LimitMiB: limitMiB, NeededMiB: int((uint64(pages) + 15) / 16)}
}
