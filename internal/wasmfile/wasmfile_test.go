package wasmfile_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/wasmfile"
)

const header = "\x00asm\x01\x00\x00\x00"

// module is a small hand-written module: a type (i32, i32) -> i32, an imported
// function of it, a function of it exported as "f", a table and a memory.
var module = header +
	"\x01\x07\x01\x60\x02\x7f\x7f\x01\x7f" + // type section
	"\x02\x0b\x01\x03env\x03add\x00\x00" + // import env.add
	"\x03\x02\x01\x00" + // one function of type 0
	"\x04\x05\x01\x70\x01\x01\x02" + // table funcref min 1 max 2
	"\x05\x03\x01\x00\x11" + // memory min 17
	"\x07\x0e\x02\x01f\x00\x01\x06memory\x02\x00" // exports f (func 1), memory
	// no code section: Read does not need one

// TestDeclaredLimits reads imports, exports, signatures, memories and tables of a
// hand-written module, and refuses broken ones with the offset.
func TestDeclaredLimits(t *testing.T) {
	m, err := wasmfile.Read([]byte(module))
	if err != nil {
		t.Fatal(err)
	}
	want := &wasmfile.Module{
		Imports:  []wasmfile.Import{{Module: "env", Name: "add", Kind: wasmfile.FuncKind, Type: "(i32, i32) -> i32"}},
		Exports:  []wasmfile.Export{{Name: "f", Kind: wasmfile.FuncKind, Index: 1, Type: "(i32, i32) -> i32"}, {Name: "memory", Kind: wasmfile.MemoryKind}},
		Memories: []wasmfile.Memory{{Limits: wasmfile.Limits{Min: 17}}},
		Tables:   []wasmfile.Table{{Limits: wasmfile.Limits{Min: 1, Max: 2, HasMax: true}, ElemType: "funcref"}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("Read = %+v\nwant %+v", m, want)
	}
	if got := m.InitialMemoryPages(); got != 17 {
		t.Errorf("InitialMemoryPages = %d, want 17", got)
	}
	for _, tc := range []struct {
		name, mod, want string
	}{
		{"empty", "", "no \\0asm header"},
		{"not wasm", "junk junk", "no \\0asm header"},
		{"component", "\x00asm\x0d\x00\x01\x00", "version 0d000100"},
		{"section past the end", header + "\x01\x7f\x00", "runs past the end"},
		{"huge count", header + "\x02\x05\xff\xff\xff\xff\x0f", "more than the 65536"},
		{"count beyond bytes", header + "\x02\x02\x40\x00", "64 imports in 1 bytes"},
		{"long leb", header + "\x05\x07\x01\x00\xff\xff\xff\xff\x7f", "longer than 32 bits"},
		{"name past the end", header + "\x02\x03\x01\x09a", "name of 9 bytes in 1"},
		{"bad limits", header + "\x05\x03\x01\x09\x01", "limits flags 0x09"},
		{"left over", header + "\x05\x04\x01\x00\x01\x00", "1 bytes left over at the end of section 5"},
		{"bad export kind", header + "\x07\x04\x01\x01f\x09", "export kind 0x09"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wasmfile.Read([]byte(tc.mod))
			var e *wasmfile.Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read(%q) = %v, want an *Error containing %q", tc.mod, err, tc.want)
			}
		})
	}
}

// TestRealModules: the Go and C plugins of the repository read, with the exports the
// host requires.
func TestRealModules(t *testing.T) {
	for _, rel := range []string{"plugins/toolbox/toolbox.wasm", "plugins/textkit/textkit.wasm"} {
		b, err := os.ReadFile(testenv.Path(rel))
		if err != nil {
			t.Fatal(err)
		}
		m, err := wasmfile.Read(b)
		if err != nil {
			t.Fatalf("Read(%s) = %v", rel, err)
		}
		exports := map[string]string{}
		for _, e := range m.Exports {
			exports[e.Name] = e.Type
		}
		if exports["mcpwh_call"] != "() -> i32" || exports["mcpwh_abi_version"] != "() -> i32" {
			t.Errorf("%s exports %v, want mcpwh_call and mcpwh_abi_version () -> i32", rel, exports)
		}
		if len(m.Memories) != 1 || m.InitialMemoryPages() == 0 {
			t.Errorf("%s memories %+v, want one", rel, m.Memories)
		}
	}
}

// FuzzDeclaredLimits: no input makes Read panic, and whatever it accepts stays within
// its caps.
func FuzzDeclaredLimits(f *testing.F) {
	f.Add([]byte(module))
	f.Add([]byte(header))
	f.Add([]byte(header + "\x02\x05\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := wasmfile.Read(b)
		if err != nil {
			var e *wasmfile.Error
			if !errors.As(err, &e) || e.Offset < 0 || e.Offset > len(b) {
				t.Fatalf("Read error %v (%T) has no offset inside the input", err, err)
			}
			return
		}
		if len(m.Imports) > wasmfile.MaxItems || len(m.Exports) > wasmfile.MaxItems || len(m.Imports)+len(m.Exports) > len(b) {
			t.Fatalf("Read accepted %d imports and %d exports from %d bytes", len(m.Imports), len(m.Exports), len(b))
		}
	})
}
