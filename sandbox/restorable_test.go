package sandbox

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// module assembles a module of the given sections (id, body); restorable reads
// sections without validating them, so a code section alone is enough.
func module(sections ...[]byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		b = append(appendU32(append(b, s[0]), uint32(len(s)-1)), s[1:]...)
	}
	return b
}

// code is a code section of one function without locals whose body is instrs.
func code(instrs ...byte) []byte {
	body := append([]byte{0}, instrs...)
	return append(appendU32([]byte{10, 1}, uint32(len(body))), body...)
}

func TestRestorable(t *testing.T) {
	tests := []struct {
		name    string
		wasm    []byte
		globals int    // mutable globals in the plan
		refused string // "" if restorable
	}{
		{"textkit", fixture(t, "plugins/textkit/textkit.wasm"), 1, ""},
		{"isolation", fixture(t, "testdata/wasm/isolation.wasm"), 1, ""},
		{"globalleak", fixture(t, "testdata/wasm/globalleak.wasm"), 3, ""},
		{"tableleak", fixture(t, "testdata/wasm/tableleak.wasm"), 0, "table.set"},
		{"tablegrow", fixture(t, "testdata/wasm/tablegrow.wasm"), 0, "table.grow"},
		{"block", module(code(0x02, 0x40, 0x41, 0x80, 0x80, 0x80, 0x80, 0x08, 0x1a, 0x0b, 0x0b)), 0, ""},
		{"memory.init and copy", module(code(0xfc, 0x08, 0x00, 0x00, 0xfc, 0x0a, 0x00, 0x00, 0x0b)), 0, ""},
		{"data.drop", module(code(0xfc, 0x09, 0x00, 0x0b)), 0, "data.drop"},
		{"elem.drop", module(code(0xfc, 0x0d, 0x00, 0x0b)), 0, "elem.drop"},
		{"table.copy", module(code(0xfc, 0x0e, 0x00, 0x00, 0x0b)), 0, "table.copy"},
		{"table.fill", module(code(0xfc, 0x11, 0x00, 0x0b)), 0, "table.fill"},
		{"table.init", module(code(0xfc, 0x0c, 0x00, 0x00, 0x0b)), 0, "table.init"},
		{"simd", module(code(0xfd, 0x0c, 0x0b)), 0, "opcode 0xfd"},
		{"tail call", module(code(0x12, 0x00, 0x0b)), 0, "opcode 0x12"},
		{"bytes after the end", module(code(0x0b, 0x0b)), 0, "left over"},
		{"truncated body", module(code(0x41)), 0, "truncated"},
		{"mutable v128 global", module([]byte{6, 1, 0x7b, 1, 0xfd, 0x0c}), 0, "type 0x7b"},
		{"mutable funcref global", module([]byte{6, 1, 0x70, 1, 0xd0, 0x70, 0x0b}), 0, "type 0x70"},
		{"exported mutable global", module([]byte{6, 1, 0x7f, 1, 0x41, 0x00, 0x0b}, []byte{7, 1, 1, 'g', 3, 0}), 1, ""},
		{"imported global", module([]byte{2, 1, 1, 'm', 1, 'g', 3, 0x7f, 0}), 0, "imports globals"},
		{"initial memory over the image limit", module([]byte{5, 1, 0, 17}, code(0x0b)), 0, "initial memory of 1088 KiB"},
		{"initial memory within the image limit", module([]byte{5, 1, 0, 16}, code(0x0b)), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, plan, err := restorable(tt.wasm)
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("restorable() = %v, want a refusal naming %q", err, tt.refused)
				}
				if string(out) != string(tt.wasm) {
					t.Errorf("restorable() rewrote a module it refused")
				}
				return
			}
			if err != nil {
				t.Fatalf("restorable() = %v", err)
			}
			if len(plan.globals) != tt.globals {
				t.Errorf("restorable() restores globals %q, want %d", plan.globals, tt.globals)
			}
			again, plan2, err := restorable(out)
			if err != nil || string(again) != string(out) || !slices.Equal(plan2.globals, plan.globals) {
				t.Errorf("restorable(its output) = %v, %v; want the same module and globals %q", plan2, err, plan.globals)
			}
		})
	}
}

func fixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile("../" + rel)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzRestorable feeds untrusted module bytes to the code scanner and the export
// rewrite: they must not panic, and a module they rewrite must read again as
// restorable, unchanged, with the same globals.
func FuzzRestorable(f *testing.F) {
	// Small seeds: with the 55-60 KB C guests as seeds the fuzzer ran a handful of
	// inputs a minute (TestRestorable reads those).
	for _, p := range []string{"testdata/wasm/globalleak.wasm", "testdata/wasm/tableleak.wasm", "testdata/wasm/loop.wasm"} {
		f.Add(fixture(f, p))
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, plan, err := restorable(wasm)
		if err != nil {
			return
		}
		again, plan2, err := restorable(out)
		if err != nil || string(again) != string(out) || !slices.Equal(plan2.globals, plan.globals) {
			t.Fatalf("restorable(its output) = %v; globals %q, then %v", err, plan.globals, plan2)
		}
	})
}
