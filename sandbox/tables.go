package sandbox

import (
	"errors"
	"fmt"
)

// tableElemBytes is what wazero keeps per table element: one uintptr reference, on the
// Go heap. A table's worst case is its maximum times this.
const tableElemBytes = 8

// maxTables bounds how many tables a module may declare; wazero would take up to
// 2^32, each with its own Go allocation.
const maxTables = 100

// tableLimits is one table as the module declares it (the table section, WebAssembly
// core 5.3.10). max is the bound boundTables gives it.
type tableLimits struct {
	min, max uint32
	hadMax   bool // the module declared the maximum; false: boundTables set max = min
}

// tablesBytes is the tables' worst-case size in bytes.
func tablesBytes(ts []tableLimits) uint64 {
	var n uint64
	for _, t := range ts {
		n += uint64(t.max) * tableElemBytes
	}
	return n
}

// boundTables reads the table section of a WebAssembly module and bounds every table:
// a table that declares no maximum gets its minimum as maximum, so that table.grow
// fails on it (returns -1, as the core spec allows) instead of growing without bound;
// wazero has no option that limits tables. It returns the module, rewritten only when
// a table had no maximum, and the tables. It checks every byte it reads: the module
// is untrusted and has not been validated yet.
func boundTables(wasm []byte) ([]byte, []tableLimits, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, nil, errors.New("no WebAssembly header")
	}
	for off := 8; off < len(wasm); {
		id := wasm[off]
		size, n, err := readU32(wasm[off+1:])
		if err != nil {
			return nil, nil, fmt.Errorf("section at offset %d: %w", off, err)
		}
		start := off + 1 + n
		if uint64(size) > uint64(len(wasm)-start) {
			return nil, nil, fmt.Errorf("section at offset %d: size %d runs past the end", off, size)
		}
		end := start + int(size)
		if id == 4 { // the table section; a valid module has at most one
			ts, rewrite, err := parseTables(wasm[start:end])
			if err != nil {
				return nil, nil, fmt.Errorf("table section: %w", err)
			}
			if !rewrite {
				return wasm, limitsOf(ts), nil
			}
			body := appendU32(nil, uint32(len(ts)))
			for i, t := range ts {
				body = append(body, wasm[start+t.refOffset], 0x01)
				body = appendU32(appendU32(body, ts[i].min), ts[i].max)
			}
			out := make([]byte, 0, len(wasm)+len(body))
			out = append(out, wasm[:off]...)
			out = append(appendU32(append(out, 4), uint32(len(body))), body...)
			out = append(out, wasm[end:]...)
			return out, limitsOf(ts), nil
		}
		off = end
	}
	return wasm, nil, nil
}

type parsedTable struct {
	tableLimits
	refOffset int // of the element type, within the section
}

func limitsOf(ts []parsedTable) []tableLimits {
	out := make([]tableLimits, len(ts))
	for i, t := range ts {
		out[i] = t.tableLimits
	}
	return out
}

// parseTables reads a table section's entries: a count, then per table an element
// type (funcref 0x70 or externref 0x6f) and limits (0x00 min, or 0x01 min max).
func parseTables(b []byte) ([]parsedTable, bool, error) {
	count, off, err := readU32(b)
	if err != nil {
		return nil, false, err
	}
	if count > maxTables {
		return nil, false, fmt.Errorf("%d tables, more than the %d allowed", count, maxTables)
	}
	ts := make([]parsedTable, 0, count)
	rewrite := false
	for i := range int(count) {
		if len(b)-off < 2 {
			return nil, false, fmt.Errorf("table %d: truncated", i)
		}
		t := parsedTable{refOffset: off}
		if ref := b[off]; ref != 0x70 && ref != 0x6f {
			return nil, false, fmt.Errorf("table %d: element type 0x%02x is not funcref or externref", i, ref)
		}
		flag := b[off+1]
		off += 2
		var n int
		if t.min, n, err = readU32(b[off:]); err != nil {
			return nil, false, fmt.Errorf("table %d: minimum: %w", i, err)
		}
		off += n
		switch flag {
		case 0x00:
			t.max = t.min
			rewrite = true
		case 0x01:
			if t.max, n, err = readU32(b[off:]); err != nil {
				return nil, false, fmt.Errorf("table %d: maximum: %w", i, err)
			}
			off += n
			if t.max < t.min {
				return nil, false, fmt.Errorf("table %d: maximum %d is below its minimum %d", i, t.max, t.min)
			}
			t.hadMax = true
		default:
			return nil, false, fmt.Errorf("table %d: limits flag 0x%02x is not supported", i, flag)
		}
		ts = append(ts, t)
	}
	if off != len(b) {
		return nil, false, fmt.Errorf("%d bytes after the last table", len(b)-off)
	}
	return ts, rewrite, nil
}

// readU32 reads an unsigned LEB128 of at most 32 bits and returns it with its length.
func readU32(b []byte) (uint32, int, error) {
	var v uint64
	for i := range 5 {
		if i >= len(b) {
			return 0, 0, errors.New("truncated integer")
		}
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if v > 0xffffffff {
				return 0, 0, errors.New("integer overflows 32 bits")
			}
			return uint32(v), i + 1, nil
		}
	}
	return 0, 0, errors.New("integer longer than 5 bytes")
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// checkTables refuses tables whose worst case, with the linear memory's minimum, does
// not fit in the memory limit: memory_mib counts both.
func checkTables(ts []tableLimits, memMinBytes, limitBytes uint64) error {
	used := memMinBytes
	for i, t := range ts {
		n := uint64(t.max) * tableElemBytes
		if used+n > limitBytes {
			what := "may grow to"
			if !t.hadMax {
				what = "declares no maximum, so it is held to its minimum of"
			}
			return fmt.Errorf("table %d %s %d elements (%d MiB at %d bytes each), which with the rest of its memory exceeds the memory limit of %d MiB (memory_mib counts tables)",
				i, what, t.max, ceilMiB(n), tableElemBytes, limitBytes>>20)
		}
		used += n
	}
	return nil
}

func ceilMiB(n uint64) uint64 { return (n + 1<<20 - 1) >> 20 }
