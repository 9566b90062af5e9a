package sandbox

import (
	"errors"
	"fmt"
	"strconv"
)

// A module is restorable when everything a call can change in its instance is state
// the host can put back exactly: the bytes of its linear memory (while it has not
// grown) and its mutable globals. restorable decides that from the module's bytes,
// before compiling it, and rewrites the module so that wazero exposes every mutable
// global (wazero reaches only exported ones: a C guest's stack pointer is not).
//
// It refuses, and the module keeps a fresh instance per call, when the code could
// change what cannot be put back:
//   - tables: table.set, table.grow, table.fill, table.copy, table.init, elem.drop;
//   - data segments: data.drop (memory.init only reads them);
//   - mutable globals of a type whose value is not one 64-bit word (v128, references);
//   - any instruction it does not know (SIMD, atomics, tail calls, exceptions,
//     proposals yet to come): an unknown opcode is a refusal, never a skip.
//
// Like boundTables it checks every byte: the module has not been validated yet. A
// module it cannot read is not restorable; the compiler then gives its own error.

// globalExportPrefix names the exports restorable adds for mutable globals.
const globalExportPrefix = "mcpwh.global."

// restorePlan is what restoring an instance of a restorable module touches.
type restorePlan struct {
	globals []string // the export names of every mutable global
}

// restorable returns the module, rewritten to export its mutable globals, and the
// plan to restore its instances; or the unchanged module and why it cannot be
// restored.
func restorable(wasm []byte) ([]byte, *restorePlan, error) {
	// Skip reading the code of a module too large to restore (a Go guest's 3 MB take
	// tens of milliseconds).
	if pages, ok, _ := initialMemory(wasm); ok && uint64(pages)<<16 > keptImageLimit {
		return wasm, nil, fmt.Errorf("its initial memory of %d KiB is over the %d KiB restored by copying", uint64(pages)<<6, keptImageLimit>>10)
	}
	secs, err := sections(wasm)
	if err != nil {
		return wasm, nil, err
	}
	var (
		importedGlobals uint32
		mutable         []uint32 // indices of mutable globals
		exported        = map[uint32]string{}
		names           = map[string]bool{}
		exportSec       = -1
		insertAt        = len(wasm) // where a new export section would go
	)
	for i, s := range secs {
		body := wasm[s.start:s.end]
		switch s.id {
		case 2:
			if importedGlobals, err = importGlobals(body); err != nil {
				return wasm, nil, fmt.Errorf("import section: %w", err)
			}
		case 6:
			if mutable, err = mutableGlobals(body, importedGlobals); err != nil {
				return wasm, nil, fmt.Errorf("global section: %w", err)
			}
		case 7:
			exportSec = i
			if err := exportedGlobals(body, exported, names); err != nil {
				return wasm, nil, fmt.Errorf("export section: %w", err)
			}
		case 10:
			if err := checkCode(body); err != nil {
				return wasm, nil, fmt.Errorf("code section: %w", err)
			}
		}
		if insertAt == len(wasm) && (s.id == 8 || s.id == 9 || s.id == 10 || s.id == 11 || s.id == 12) {
			insertAt = s.off
		}
	}
	if importedGlobals > 0 {
		// The host modules export no globals, so instantiation would fail anyway.
		return wasm, nil, errors.New("imports globals")
	}
	plan := &restorePlan{}
	var added []byte
	nAdded := uint32(0)
	for _, g := range mutable {
		if name, ok := exported[g]; ok {
			plan.globals = append(plan.globals, name)
			continue
		}
		name := globalExportPrefix + strconv.FormatUint(uint64(g), 10)
		if names[name] {
			return wasm, nil, fmt.Errorf("already exports %q", name)
		}
		added = appendU32(added, uint32(len(name)))
		added = append(added, name...)
		added = appendU32(append(added, 0x03), g) // export kind global
		nAdded++
		plan.globals = append(plan.globals, name)
	}
	if nAdded == 0 {
		return wasm, plan, nil
	}
	var body []byte
	start, end := insertAt, insertAt
	if exportSec >= 0 {
		s := secs[exportSec]
		old := wasm[s.start:s.end]
		count, n, _ := readU32(old) // exportedGlobals read it
		body = appendU32(nil, count+nAdded)
		body = append(append(body, old[n:]...), added...)
		start, end = s.off, s.end
	} else {
		body = append(appendU32(nil, nAdded), added...)
	}
	out := make([]byte, 0, len(wasm)+len(body)+8)
	out = append(out, wasm[:start]...)
	out = append(appendU32(append(out, 7), uint32(len(body))), body...)
	out = append(out, wasm[end:]...)
	return out, plan, nil
}

// section is one section of a module: its id, where it begins (off, at the id byte)
// and its body [start, end).
type section struct {
	id              byte
	off, start, end int
}

func sections(wasm []byte) ([]section, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errors.New("no WebAssembly header")
	}
	var secs []section
	for off := 8; off < len(wasm); {
		size, n, err := readU32(wasm[off+1:])
		if err != nil {
			return nil, fmt.Errorf("section at offset %d: %w", off, err)
		}
		start := off + 1 + n
		if uint64(size) > uint64(len(wasm)-start) {
			return nil, fmt.Errorf("section at offset %d: size %d runs past the end", off, size)
		}
		secs = append(secs, section{id: wasm[off], off: off, start: start, end: start + int(size)})
		off = start + int(size)
	}
	return secs, nil
}

// importGlobals counts the globals among the imports.
func importGlobals(b []byte) (uint32, error) {
	r := &codeReader{b: b}
	count := r.u32()
	var globals uint32
	for i := uint32(0); i < count && r.err == nil; i++ {
		r.skip(int(r.u32())) // module name
		r.skip(int(r.u32())) // field name
		switch kind := r.byte(); kind {
		case 0x00: // function: type index
			r.u32()
		case 0x01: // table: element type, limits
			r.byte()
			r.limits()
		case 0x02: // memory: limits
			r.limits()
		case 0x03: // global: type, mutability
			r.byte()
			r.byte()
			globals++
		default:
			r.fail("import kind 0x%02x", kind)
		}
	}
	return globals, r.end()
}

// mutableGlobals returns the indices of the mutable globals the section defines,
// refusing those whose value is not one 64-bit word.
func mutableGlobals(b []byte, first uint32) ([]uint32, error) {
	r := &codeReader{b: b}
	count := r.u32()
	var out []uint32
	for i := uint32(0); i < count && r.err == nil; i++ {
		typ, mut := r.byte(), r.byte()
		if r.err != nil {
			break
		}
		switch {
		case mut > 1:
			r.fail("global %d: mutability 0x%02x", i, mut)
		case mut == 1 && typ != 0x7f && typ != 0x7e && typ != 0x7d && typ != 0x7c:
			r.fail("global %d: mutable of type 0x%02x, which restoring does not cover", first+i, typ)
		case mut == 1:
			out = append(out, first+i)
		}
		r.expr()
	}
	return out, r.end()
}

// exportedGlobals records the name of every exported global, and every export name.
func exportedGlobals(b []byte, globals map[uint32]string, names map[string]bool) error {
	r := &codeReader{b: b}
	count := r.u32()
	for i := uint32(0); i < count && r.err == nil; i++ {
		name := string(r.take(int(r.u32())))
		kind, idx := r.byte(), r.u32()
		names[name] = true
		if kind == 0x03 && r.err == nil {
			if _, ok := globals[idx]; !ok {
				globals[idx] = name
			}
		}
	}
	return r.end()
}

// checkCode reads every function body and refuses an instruction that changes a
// table or a segment, or that it does not know.
func checkCode(b []byte) error {
	r := &codeReader{b: b}
	count := r.u32()
	for i := uint32(0); i < count && r.err == nil; i++ {
		size := int(r.u32())
		if r.err != nil {
			break
		}
		if size > len(r.b)-r.off {
			r.fail("function %d: size %d runs past the end", i, size)
			break
		}
		body := &codeReader{b: r.b[r.off : r.off+size]}
		r.off += size
		groups := body.u32()
		for j := uint32(0); j < groups && body.err == nil; j++ {
			body.u32()  // count
			body.byte() // type
		}
		body.expr()
		if err := body.end(); err != nil {
			return fmt.Errorf("function %d: %w", i, err)
		}
	}
	return r.end()
}

// codeReader reads a section or a function body; the first error sticks and every
// read after it returns zero.
type codeReader struct {
	b   []byte
	off int
	err error
}

func (r *codeReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: %s", r.off, fmt.Sprintf(format, args...))
	}
}

// end reports the first error, or bytes left over.
func (r *codeReader) end() error {
	if r.err == nil && r.off != len(r.b) {
		r.fail("%d bytes left over", len(r.b)-r.off)
	}
	return r.err
}

func (r *codeReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *codeReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail("truncated")
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *codeReader) skip(n int) { r.take(n) }

func (r *codeReader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n, err := readU32(r.b[r.off:])
	if err != nil {
		r.fail("%v", err)
		return 0
	}
	r.off += n
	return v
}

// sleb reads a signed LEB128 of at most bits bits; its value does not matter here,
// only where it ends.
func (r *codeReader) sleb(bits int) {
	for i := 0; i < (bits+6)/7; i++ {
		if r.byte()&0x80 == 0 || r.err != nil {
			return
		}
	}
	r.fail("integer longer than %d bits", bits)
}

func (r *codeReader) limits() {
	switch flag := r.byte(); flag {
	case 0x00:
		r.u32()
	case 0x01:
		r.u32()
		r.u32()
	default:
		r.fail("limits flag 0x%02x", flag)
	}
}

// blockType reads a block's type: empty, a value type, or a type index (s33).
func (r *codeReader) blockType() {
	if r.err != nil || r.off >= len(r.b) {
		r.fail("truncated")
		return
	}
	switch r.b[r.off] {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		r.off++
		return
	}
	r.sleb(33)
}

func (r *codeReader) memarg() {
	if align := r.u32(); align >= 0x40 {
		r.fail("memory index in a memarg") // multiple memories
	}
	r.u32()
}

// expr reads instructions up to the end that closes the expression.
func (r *codeReader) expr() {
	depth := 0
	for r.err == nil {
		at := r.off
		op := r.byte()
		switch {
		case op == 0x0b: // end
			if depth == 0 {
				return
			}
			depth--
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			r.blockType()
			depth++
		case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0f || op == 0x1a || op == 0x1b ||
			op == 0xd1 || (op >= 0x45 && op <= 0xc4):
			// unreachable, nop, else, return, drop, select, ref.is_null, numeric
		case op == 0x0c || op == 0x0d || op == 0x10 || (op >= 0x20 && op <= 0x24) || op == 0x25 || op == 0xd2:
			// br, br_if, call, local.*, global.*, table.get, ref.func
			r.u32()
		case op == 0x0e: // br_table
			n := r.u32()
			for i := uint32(0); i <= n && r.err == nil; i++ {
				r.u32()
			}
		case op == 0x11: // call_indirect
			r.u32()
			r.u32()
		case op == 0x1c: // select t*
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				r.byte()
			}
		case op >= 0x28 && op <= 0x3e: // loads and stores
			r.memarg()
		case op == 0x3f || op == 0x40: // memory.size, memory.grow
			r.u32()
		case op == 0x41:
			r.sleb(32)
		case op == 0x42:
			r.sleb(64)
		case op == 0x43:
			r.skip(4)
		case op == 0x44:
			r.skip(8)
		case op == 0xd0: // ref.null
			r.byte()
		case op == 0xfc:
			r.prefixed(at)
		case op == 0x26:
			r.off = at
			r.fail("table.set changes a table")
		default:
			r.off = at
			r.fail("opcode 0x%02x is not covered by restoring", op)
		}
	}
}

// prefixed reads a 0xfc instruction: saturating truncations and bulk memory and
// table operations.
func (r *codeReader) prefixed(at int) {
	switch sub := r.u32(); sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // trunc_sat
	case 8: // memory.init
		r.u32()
		r.u32()
	case 10: // memory.copy
		r.u32()
		r.u32()
	case 11: // memory.fill
		r.u32()
	case 16: // table.size
		r.u32()
	default:
		r.off = at
		names := map[uint32]string{9: "data.drop", 12: "table.init", 13: "elem.drop", 14: "table.copy", 15: "table.grow", 17: "table.fill"}
		if name, ok := names[sub]; ok {
			r.fail("%s changes a table or a segment", name)
		} else {
			r.fail("opcode 0xfc %d is not covered by restoring", sub)
		}
	}
}
