package wasmfile

import (
	"errors"
	"fmt"
	"strings"
)

// PageSize is the size of one page of linear memory.
const PageSize = 64 << 10

// Caps on what a module may declare, beyond which Read gives up: far above what a
// compiler emits (a Go plugin has about 3,000 functions and 200 types), and small
// enough that a hostile count cannot make Read allocate much.
const (
	MaxItems     = 1 << 16 // types, imports, exports, memories, tables
	MaxFunctions = 1 << 20
	MaxParams    = 1000 // parameters or results of one function type
)

// Module is what a module declares.
type Module struct {
	Imports  []Import
	Exports  []Export
	Memories []Memory // the module's own, after any imported ones
	Tables   []Table  // the module's own, after any imported ones
}

// Kind is what an import or an export is.
type Kind string

// Kinds of imports and exports.
const (
	FuncKind   Kind = "func"
	TableKind  Kind = "table"
	MemoryKind Kind = "memory"
	GlobalKind Kind = "global"
	TagKind    Kind = "tag"
)

// Import is one imported function, table, memory or global.
type Import struct {
	Module, Name string
	Kind         Kind
	Type         string  // a function's signature, e.g. "(i32, i32) -> i32"; "" for others
	Memory       *Memory // when Kind is MemoryKind
	Table        *Table  // when Kind is TableKind
}

// Export is one exported item.
type Export struct {
	Name  string
	Kind  Kind
	Index uint32
	Type  string // a function's signature when the module declares it; "" for others
}

// Limits are a memory's or a table's bounds: in pages for memories, in elements
// for tables.
type Limits struct {
	Min    uint64
	Max    uint64
	HasMax bool
}

func (l Limits) String() string {
	if !l.HasMax {
		return fmt.Sprintf("min %d, no max", l.Min)
	}
	return fmt.Sprintf("min %d, max %d", l.Min, l.Max)
}

// Memory is one linear memory's declaration.
type Memory struct {
	Limits
	Shared, Memory64 bool
}

// Table is one table's declaration.
type Table struct {
	Limits
	ElemType string // "funcref", "externref" or "0xNN"
}

// Error is a module that cannot be read, with the byte offset where reading failed.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("not a readable WebAssembly module: at byte %d: %s", e.Offset, e.Msg)
}

// errTruncated is the message of an Error for a module that ends too early.
var errTruncated = errors.New("unexpected end of the module")

type reader struct {
	b   []byte
	off int // offset of b[0] in the module
	pos int
}

func (r *reader) fail(format string, args ...any) error {
	return &Error{Offset: r.off + r.pos, Msg: fmt.Sprintf(format, args...)}
}

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, r.fail("%v", errTruncated)
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *reader) uleb(bits uint) (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= bits {
			return 0, r.fail("integer longer than %d bits", bits)
		}
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if bits < 64 && v>>bits != 0 {
				return 0, r.fail("integer longer than %d bits", bits)
			}
			return v, nil
		}
	}
}

func (r *reader) u32() (uint32, error) {
	v, err := r.uleb(32)
	return uint32(v), err
}

// count reads a vector length, held to cap and to the bytes left (each element
// takes at least one byte).
func (r *reader) count(what string, cap int) (int, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if int(n) > cap {
		return 0, r.fail("%d %s, more than the %d this reader accepts", n, what, cap)
	}
	if int(n) > len(r.b)-r.pos {
		return 0, r.fail("%d %s in %d bytes", n, what, len(r.b)-r.pos)
	}
	return int(n), nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.pos {
		return nil, r.fail("%v", errTruncated)
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s, nil
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	if int64(n) > int64(len(r.b)-r.pos) {
		return "", r.fail("name of %d bytes in %d", n, len(r.b)-r.pos)
	}
	b, _ := r.bytes(int(n))
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

func (r *reader) limits(memory bool) (Memory, error) {
	flags, err := r.byte()
	if err != nil {
		return Memory{}, err
	}
	if flags > 7 || (!memory && flags > 1) {
		return Memory{}, r.fail("limits flags 0x%02x", flags)
	}
	m := Memory{Shared: flags&2 != 0, Memory64: flags&4 != 0}
	bits := uint(32)
	if m.Memory64 {
		bits = 64
	}
	if m.Min, err = r.uleb(bits); err != nil {
		return Memory{}, err
	}
	if flags&1 != 0 {
		m.HasMax = true
		if m.Max, err = r.uleb(bits); err != nil {
			return Memory{}, err
		}
	}
	return m, nil
}

func (r *reader) table() (Table, error) {
	t, err := r.byte()
	if err != nil {
		return Table{}, err
	}
	l, err := r.limits(false)
	if err != nil {
		return Table{}, err
	}
	return Table{Limits: l.Limits, ElemType: valType(t)}, nil
}

func valType(b byte) string {
	switch b {
	case 0x7f:
		return "i32"
	case 0x7e:
		return "i64"
	case 0x7d:
		return "f32"
	case 0x7c:
		return "f64"
	case 0x7b:
		return "v128"
	case 0x70:
		return "funcref"
	case 0x6f:
		return "externref"
	}
	return fmt.Sprintf("0x%02x", b)
}

// Read reads the declarations of the module b.
func Read(b []byte) (*Module, error) {
	r := &reader{b: b}
	head, err := r.bytes(8)
	if err != nil || string(head[:4]) != "\x00asm" {
		return nil, &Error{Msg: "no \\0asm header"}
	}
	if v := head[4:]; string(v) != "\x01\x00\x00\x00" {
		return nil, &Error{Offset: 4, Msg: fmt.Sprintf("binary format version %x, want 1 (a component or a future format?)", v)}
	}
	m := &Module{}
	var types []string
	var funcTypes []uint32 // the type of every function, imported ones first
	for r.pos < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		start := r.pos
		body, err := r.bytes(int(size))
		if err != nil {
			return nil, r.fail("section %d of %d bytes runs past the end", id, size)
		}
		s := &reader{b: body, off: start}
		switch id {
		case 1:
			types, err = s.types()
		case 2:
			err = s.imports(m, &funcTypes)
		case 3:
			err = s.functions(&funcTypes)
		case 4:
			err = s.tables(m)
		case 5:
			err = s.memories(m)
		case 7:
			err = s.exports(m)
		default:
			continue // code, data, custom sections...: nothing declared there
		}
		if err != nil {
			return nil, err
		}
		if s.pos != len(s.b) {
			return nil, s.fail("%d bytes left over at the end of section %d", len(s.b)-s.pos, id)
		}
	}
	sig := func(fn uint32) string {
		if int(fn) < len(funcTypes) && int(funcTypes[fn]) < len(types) {
			return types[funcTypes[fn]]
		}
		return ""
	}
	imported := uint32(0)
	for i := range m.Imports {
		if m.Imports[i].Kind == FuncKind {
			m.Imports[i].Type = sig(imported)
			imported++
		}
	}
	for i := range m.Exports {
		if m.Exports[i].Kind == FuncKind {
			m.Exports[i].Type = sig(m.Exports[i].Index)
		}
	}
	return m, nil
}

func (r *reader) types() ([]string, error) {
	n, err := r.count("types", MaxItems)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	for range n {
		form, err := r.byte()
		if err != nil {
			return nil, err
		}
		if form != 0x60 {
			return nil, r.fail("type form 0x%02x (only function types are read)", form)
		}
		var parts [2][]string
		for i := range parts {
			k, err := r.count("parameters", MaxParams)
			if err != nil {
				return nil, err
			}
			for range k {
				t, err := r.byte()
				if err != nil {
					return nil, err
				}
				parts[i] = append(parts[i], valType(t))
			}
		}
		s := "(" + strings.Join(parts[0], ", ") + ")"
		switch len(parts[1]) {
		case 0:
		case 1:
			s += " -> " + parts[1][0]
		default:
			s += " -> (" + strings.Join(parts[1], ", ") + ")"
		}
		out = append(out, s)
	}
	return out, nil
}

func (r *reader) imports(m *Module, funcTypes *[]uint32) error {
	n, err := r.count("imports", MaxItems)
	if err != nil {
		return err
	}
	for range n {
		var im Import
		if im.Module, err = r.name(); err != nil {
			return err
		}
		if im.Name, err = r.name(); err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0:
			im.Kind = FuncKind
			t, err := r.u32()
			if err != nil {
				return err
			}
			*funcTypes = append(*funcTypes, t)
		case 1:
			im.Kind = TableKind
			t, err := r.table()
			if err != nil {
				return err
			}
			im.Table = &t
		case 2:
			im.Kind = MemoryKind
			mem, err := r.limits(true)
			if err != nil {
				return err
			}
			im.Memory = &mem
		case 3:
			im.Kind = GlobalKind
			if _, err := r.bytes(2); err != nil {
				return err
			}
		case 4:
			im.Kind = TagKind
			if _, err := r.byte(); err != nil {
				return err
			}
			if _, err := r.u32(); err != nil {
				return err
			}
		default:
			return r.fail("import kind 0x%02x", kind)
		}
		m.Imports = append(m.Imports, im)
	}
	return nil
}

func (r *reader) functions(funcTypes *[]uint32) error {
	n, err := r.count("functions", MaxFunctions)
	if err != nil {
		return err
	}
	if len(*funcTypes)+n > MaxFunctions {
		return r.fail("%d functions, more than the %d this reader accepts", len(*funcTypes)+n, MaxFunctions)
	}
	for range n {
		t, err := r.u32()
		if err != nil {
			return err
		}
		*funcTypes = append(*funcTypes, t)
	}
	return nil
}

func (r *reader) tables(m *Module) (err error) {
	m.Tables, err = vec(r, "tables", r.table)
	return err
}

func (r *reader) memories(m *Module) (err error) {
	m.Memories, err = vec(r, "memories", func() (Memory, error) { return r.limits(true) })
	return err
}

// vec reads a vector of what: its count (at most MaxItems), then each item.
func vec[T any](r *reader, what string, item func() (T, error)) ([]T, error) {
	n, err := r.count(what, MaxItems)
	if err != nil {
		return nil, err
	}
	var out []T
	for range n {
		v, err := item()
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (r *reader) exports(m *Module) error {
	n, err := r.count("exports", MaxItems)
	if err != nil {
		return err
	}
	for range n {
		var e Export
		if e.Name, err = r.name(); err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0:
			e.Kind = FuncKind
		case 1:
			e.Kind = TableKind
		case 2:
			e.Kind = MemoryKind
		case 3:
			e.Kind = GlobalKind
		case 4:
			e.Kind = TagKind
		default:
			return r.fail("export kind 0x%02x", kind)
		}
		if e.Index, err = r.u32(); err != nil {
			return err
		}
		m.Exports = append(m.Exports, e)
	}
	return nil
}

// InitialMemoryPages is the largest initial size, in pages, of the module's
// memories, imported or its own: what an instance needs before it runs.
func (m *Module) InitialMemoryPages() uint64 {
	var n uint64
	for _, mem := range m.Memories {
		n = max(n, mem.Min)
	}
	for _, im := range m.Imports {
		if im.Memory != nil {
			n = max(n, im.Memory.Min)
		}
	}
	return n
}
