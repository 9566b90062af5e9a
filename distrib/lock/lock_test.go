package lock_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/lock"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/verify"
)

const d1 = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
const d2 = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

// TestRoundTrip: what Write writes, Read reads back equal, and writing it again gives
// the same bytes.
func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), lock.FileName)
	f := &lock.File{Plugins: map[string]lock.Entry{
		"keyed": {Source: "oci://r.example/a:1", Digest: d1, Layout: "wasm-artifact", Module: d2, Bundle: d2,
			Signer: &verify.Signer{Kind: "key", KeyID: strings.Repeat("ab", 32)}, Pulled: time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)},
		"keyless": {Source: "oci://r.example/b@" + d1, Digest: d1, Manifest: d2, Layout: "hyper-mcp-docker", Module: d2, Bundle: d1,
			Signer: &verify.Signer{Kind: "keyless", Identity: "a@b.example", Issuer: "https://i.example", Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
			Pulled: time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)},
		"none": {Source: "oci://r.example/c:2", Digest: d2, Layout: "hyper-mcp-oras", Module: d1, Pulled: time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)},
	}}
	if err := f.Write(path); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(path)
	got, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Errorf("Read = %+v, want %+v", got, f)
	}
	if err := got.Write(path); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(path); string(second) != string(first) {
		t.Errorf("rewritten lockfile differs:\n%s\n%s", first, second)
	}
	if empty, err := lock.Read(filepath.Join(t.TempDir(), "missing.lock")); err != nil || len(empty.Plugins) != 0 {
		t.Errorf("Read of a missing file = %+v, %v; want an empty file", empty, err)
	}
}

func TestParseErrors(t *testing.T) {
	entry := `{"source":"oci://r.example/a:1","digest":"` + d1 + `","layout":"wasm-artifact","module":"` + d2 + `","pulled":"2026-12-02T00:00:00Z"}`
	tests := []struct{ name, body, err string }{
		{"version", `{"version":2,"plugins":{}}`, "version 2"},
		{"unknown field", `{"version":1,"plugins":{},"extra":1}`, "unknown field"},
		{"bad digest", `{"version":1,"plugins":{"a":` + strings.Replace(entry, d1, "sha256:xyz", 1) + `}}`, "digest"},
		{"not oci", `{"version":1,"plugins":{"a":` + strings.Replace(entry, "oci://", "https://", 1) + `}}`, "not oci://"},
		{"bundle without signer", `{"version":1,"plugins":{"a":` + strings.Replace(entry, `"layout"`, `"bundle":"`+d1+`","layout"`, 1) + `}}`, "go together"},
		{"short key_id", signed(entry, `{"kind":"key","key_id":"ab"}`), `plugin "a": signer.key_id "ab": want 64`},
		{"empty key_id", signed(entry, `{"kind":"key"}`), `signer.key_id ""`},
		{"upper-case key_id", signed(entry, `{"kind":"key","key_id":"`+strings.Repeat("AB", 32)+`"}`), "signer.key_id"},
		{"key signer with identity", signed(entry, `{"kind":"key","key_id":"`+strings.Repeat("ab", 32)+`","identity":"a@b"}`), "no identity"},
		{"keyless without issuer", signed(entry, `{"kind":"keyless","identity":"a@b"}`), "needs identity and issuer"},
		{"keyless with key_id", signed(entry, `{"kind":"keyless","identity":"a@b","issuer":"https://i","key_id":"ab"}`), "no key_id"},
		{"unknown kind", signed(entry, `{"kind":"x509"}`), `signer.kind "x509"`},
		{"no kind", signed(entry, `{}`), `signer.kind ""`},
		{"unknown layout", `{"version":1,"plugins":{"a":` + strings.Replace(entry, "wasm-artifact", "zip", 1) + `}}`, `layout "zip"`},
		{"signer not an object", `{"version":1,"plugins":{"a":` + strings.Replace(entry, `"layout"`, `"bundle":"`+d1+`","signer":"ab","layout"`, 1) + `}}`, "line 1"},
		{"syntax", "{\"version\":1,\n\"plugins\":{,}}", "line 2"},
	}
	for _, tt := range tests {
		if _, err := lock.Parse([]byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: Parse = %v, want an error with %q", tt.name, err, tt.err)
		}
	}
	if _, err := lock.Parse([]byte(`{"version":1,"plugins":{"a":` + entry + `}}`)); err != nil {
		t.Errorf("Parse of a valid entry: %v", err)
	}
}

// signed is entry with a bundle and the signer JSON given, as plugin "a" of a lockfile.
func signed(entry, signer string) string {
	return `{"version":1,"plugins":{"a":` + strings.Replace(entry, `"layout"`, `"bundle":"`+d1+`","signer":`+signer+`,"layout"`, 1) + `}}`
}

// TestErrorLines: a bad entry in a lockfile written by Write and edited by hand is
// reported at the line of its plugin name, with the file's path.
func TestErrorLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), lock.FileName)
	f := &lock.File{Plugins: map[string]lock.Entry{}}
	for _, n := range []string{"a", "b", "c"} {
		f.Plugins[n] = lock.Entry{Source: "oci://r.example/" + n + ":1", Digest: d1, Layout: "wasm-artifact", Module: d2, Bundle: d2,
			Signer: &verify.Signer{Kind: "key", KeyID: strings.Repeat("ab", 32)}, Pulled: time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)}
	}
	if err := f.Write(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	text := string(b)
	at := strings.Index(text, `"b": {`)
	i := at + strings.Index(text[at:], strings.Repeat("ab", 32))
	edited := text[:i] + "ab" + text[i+64:] // b's key_id cut to "ab"
	os.WriteFile(path, []byte(edited), 0o644)
	line := 1 + strings.Count(text[:at], "\n")
	_, err := lock.Read(path)
	var le *lock.LineError
	if !errors.As(err, &le) || le.Line != line {
		t.Fatalf("Read = %v, want a LineError at line %d", err, line)
	}
	if want := fmt.Sprintf("lockfile %s:%d: plugin \"b\": signer.key_id \"ab\"", path, line); !strings.Contains(err.Error(), want) {
		t.Errorf("Read = %q, want it to contain %q", err, want)
	}
}

// FuzzParse: no bytes make the lockfile reader panic; what it accepts writes back,
// reads back equal, and prints its signers.
func FuzzParse(f *testing.F) {
	entry := `{"source":"oci://r.example/a:1","digest":"` + d1 + `","layout":"wasm-artifact","module":"` + d2 + `","pulled":"2026-12-02T00:00:00Z"}`
	f.Add([]byte(`{"version":1,"plugins":{"a":` + entry + `}}`))
	f.Add([]byte(signed(entry, `{"kind":"key","key_id":"`+strings.Repeat("ab", 32)+`"}`)))
	f.Add([]byte(signed(entry, `{"kind":"key","key_id":"ab"}`)))
	f.Add([]byte(signed(entry, `{"kind":"keyless","identity":"a@b","issuer":"https://i","time":"2026-12-01T00:00:00Z"}`)))
	f.Add([]byte("{\"version\":1,\n\"plugins\":{\"a\":{},\"a\":{}}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lf, err := lock.Parse(b)
		if err != nil {
			return
		}
		for _, e := range lf.Plugins {
			if e.Signer != nil {
				_ = e.Signer.String()
			}
		}
		out, err := lf.Marshal()
		if err != nil {
			t.Fatalf("accepted %q, Marshal: %v", b, err)
		}
		again, err := lock.Parse(out)
		if err != nil {
			t.Fatalf("accepted %q, its rewrite %q does not parse: %v", b, out, err)
		}
		if !reflect.DeepEqual(again, lf) {
			t.Fatalf("accepted %q: rewrite reads %+v, want %+v", b, again, lf)
		}
	})
}
