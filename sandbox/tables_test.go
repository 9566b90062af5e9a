package sandbox

import (
	"bytes"
	"os"
	"testing"
)

// FuzzBoundTables feeds untrusted module bytes to the table section parser: it must
// not panic, and what it returns must parse again to the same bounded tables.
func FuzzBoundTables(f *testing.F) {
	for _, p := range []string{"tablebomb", "tablegrow", "memgrow", "memhog", "asker"} {
		b, err := os.ReadFile("../testdata/wasm/" + p + ".wasm")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x04\x04\x01\x70\x00\x05"))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, ts, err := boundTables(wasm)
		if err != nil {
			return
		}
		again, ts2, err := boundTables(out)
		if err != nil {
			t.Fatalf("boundTables(its own output) = %v", err)
		}
		if !bytes.Equal(again, out) || len(ts2) != len(ts) {
			t.Fatalf("boundTables is not idempotent: %x then %x", out, again)
		}
		for i, tl := range ts2 {
			if !tl.hadMax || tl.max != ts[i].max || tl.min != ts[i].min {
				t.Fatalf("table %d = %+v after rewriting, want %+v with a maximum", i, tl, ts[i])
			}
		}
	})
}

func TestBoundTables(t *testing.T) {
	tests := []struct {
		name string
		wasm string
		want []tableLimits
		err  string
	}{
		{"no max", "\x00asm\x01\x00\x00\x00\x04\x04\x01\x70\x00\x05", []tableLimits{{min: 5, max: 5}}, ""},
		{"max", "\x00asm\x01\x00\x00\x00\x04\x05\x01\x70\x01\x05\x07", []tableLimits{{min: 5, max: 7, hadMax: true}}, ""},
		{"max below min", "\x00asm\x01\x00\x00\x00\x04\x05\x01\x70\x01\x05\x04", nil, "below its minimum"},
		{"section past end", "\x00asm\x01\x00\x00\x00\x04\x09\x01\x70\x00\x05", nil, "runs past the end"},
		{"long integer", "\x00asm\x01\x00\x00\x00\x04\x09\x01\x70\x00\xff\xff\xff\xff\xff\x01", nil, "longer than 5 bytes"},
		{"overflow", "\x00asm\x01\x00\x00\x00\x04\x08\x01\x70\x00\xff\xff\xff\xff\x7f", nil, "overflows 32 bits"},
		{"shared flag", "\x00asm\x01\x00\x00\x00\x04\x05\x01\x70\x03\x05\x07", nil, "not supported"},
		{"not wasm", "hello, world", nil, "no WebAssembly header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts, err := boundTables([]byte(tt.wasm))
			if tt.err != "" {
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.err)) {
					t.Fatalf("boundTables(%q) = %v, want error containing %q", tt.wasm, err, tt.err)
				}
				return
			}
			if err != nil || len(ts) != len(tt.want) || (len(ts) > 0 && ts[0] != tt.want[0]) {
				t.Fatalf("boundTables(%q) = %+v, %v, want %+v", tt.wasm, ts, err, tt.want)
			}
		})
	}
}
