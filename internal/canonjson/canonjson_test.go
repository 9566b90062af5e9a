package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // "" when refused
		err  error
	}{
		{"sorted, compact", ` {"b": 2, "a": [1, {"y": 1, "x": 0}]} `, `{"a":[1,{"x":0,"y":1}],"b":2}`, nil},
		{"numbers exact", `{"n":9007199254740993}`, `{"n":9007199254740993}`, nil},
		{"number as written", `[1.0, 1e2, -0]`, `[1.0,1e2,-0]`, nil},
		{"escapes normalized", `["\u0041\/", "é", "\ud83d\ude00"]`, `["A/","é","😀"]`, nil},
		{"literals", `[true,false,null,{}]`, `[true,false,null,{}]`, nil},
		{"duplicate key", `{"n":1,"n":2}`, "", ErrDuplicateKey},
		{"duplicate key, escaped", `{"a":{"k":1,"\u006b":2}}`, "", ErrDuplicateKey},
		{"lone high surrogate", `["\ud800"]`, "", ErrLoneSurrogate},
		{"lone low surrogate", `{"\udc00":1}`, "", ErrLoneSurrogate},
		{"high then non-low", `["\ud800\u0041"]`, "", ErrLoneSurrogate},
		{"escaped backslash before u", `["\\ud800"]`, `["\\ud800"]`, nil},
		{"two values", `{} {}`, "", nil},
		{"truncated", `{"a":`, "", nil},
		{"invalid UTF-8", "[\"\xff\"]", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical([]byte(tt.doc))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("Canonical(%q) = %s, want an error", tt.doc, got)
				}
				if tt.err != nil && !errors.Is(err, tt.err) {
					t.Fatalf("Canonical(%q) = %v, want %v", tt.doc, err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Canonical(%q) = %s, %v, want %s", tt.doc, got, err, tt.want)
			}
		})
	}
}

// FuzzCanonical checks that the canonical form is a fixed point and says what the
// document says, to every value and number literal.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":2,"a":[1,{"y":1,"x":0}]}`, `{"n":9007199254740993}`, `{"n":1,"n":2}`,
		`["\ud83d\ude00","\ud800"]`, `[1.5e-3,true,null]`, `"\\u"`, `{"a":{"b":{}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := Canonical(doc)
		if err != nil {
			return
		}
		again, err := Canonical(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("Canonical(Canonical(%q)) = %q, %v, want %q", doc, again, err, c)
		}
		if !sameValue(t, doc, c) {
			t.Fatalf("Canonical(%q) = %q says something else", doc, c)
		}
	})
}

func sameValue(t *testing.T, a, b []byte) bool {
	decode := func(doc []byte) any {
		d := json.NewDecoder(bytes.NewReader(doc))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("decode %q: %v", doc, err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// FuzzFastCanonical: where the one pass writes the canonical form, it is the
// decoder-based path's, byte for byte.
func FuzzFastCanonical(f *testing.F) {
	for _, s := range []string{`{"b":2,"a":[1,{"y":1,"x":0}]}`, `{"n":9007199254740993}`, `{"n":1,"n":2}`,
		`["\ud83d\ude00","\ud800"]`, `[1.5e-3,true,null]`, `"\\u"`, `{"a":{"b":{}}}`, ` { "b" : [ ] , "a" : -0.0E+1 } `,
		`{"a<":1}`, "{\"\u2028\":1}", `{"aa":1,"a":2,"b":3}`, `{"text":"lorem ipsum"}`, `01`, `[1,]`, `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !utf8.Valid(doc) {
			return
		}
		got, ok := fastCanonical(doc)
		if !ok {
			return
		}
		want, err := decodeCanonical(doc)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("fastCanonical(%q) = %q, decodeCanonical = %q, %v", doc, got, want, err)
		}
	})
}

// BenchmarkCanonical writes the canonical form of tool arguments (the audit line's
// and the signed request state's digest): "fast" as Canonical does, "decode" through
// encoding/json's tokenizer, as it did before.
//
//	go test ./internal/canonjson -run NONE -bench Canonical -count 6
func BenchmarkCanonical(b *testing.B) {
	for _, bc := range []struct{ name, doc string }{
		{"small", `{"text":"abc"}`},
		{"unsorted", `{"to":10,"delay_ms":5,"label":"done"}`},
		{"1KiB", `{"text":"` + strings.Repeat("lorem ipsum ", 85) + `"}`},
	} {
		doc := []byte(bc.doc)
		for _, path := range []struct {
			name string
			f    func([]byte) ([]byte, error)
		}{{"fast", Canonical}, {"decode", decodeCanonical}} {
			b.Run(bc.name+"/"+path.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := path.f(doc); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
